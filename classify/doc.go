// Package classify sorts upstream tools into core, deferrable and unknown,
// counts the tokens their schemas cost the client, and decides whether the
// gateway runs in bridge mode.
//
// Everything here is pure: the gateway owns the catalog and calls Classify
// once per tool, Count once per tool, then Decide whenever the catalog
// changes. Decide does no I/O and no tokenizing, so re-deciding is cheap.
package classify
