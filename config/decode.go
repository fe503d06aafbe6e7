package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The decoder writes a parsed config tree (maps, lists and scalars as the
// YAML, JSON and TOML parsers return them) onto a Config, one layer at a
// time. It replaces koanf's mapstructure step because every problem must
// name its key path and its source, and because keys are matched exactly:
// server names and env keys keep their case and their dots.
//
// Overlay rules, the same for every layer: a key that is present replaces
// the value below it; objects (including mcpServers and env maps) merge key
// by key; lists replace as a whole, so "core_tools: []" empties the default
// set; a null value leaves the value below it in place.

var (
	durationType = reflect.TypeFor[time.Duration]()
	modeType     = reflect.TypeFor[Mode]()
	serverType   = reflect.TypeFor[Server]()
	configType   = reflect.TypeFor[Config]()
	trustType    = reflect.TypeFor[Trust]()
)

// ignoredKeys are keys that other MCP clients write into the files
// toolbridge reads as they are; they mean nothing to toolbridge and are
// skipped silently so a user can point toolbridge at those files unchanged.
// Every other unknown key is an error.
func ignoredKeys(t reflect.Type) []string {
	switch t {
	case configType:
		return []string{
			"$schema",                  // JSON Schema reference for editors
			"globalShortcut",           // Claude Desktop: quick-entry hotkey
			"isUsingBuiltInNodeForMcp", // Claude Desktop: bundled Node.js for MCP servers
			"isDxtAutoUpdatesEnabled",  // Claude Desktop: desktop extension updates
			"preferences",              // Claude Desktop: app preferences object
		}
	case serverType:
		return []string{
			"autoApprove", // Cline / Roo Code: tools run without confirmation
			"alwaysAllow", // Roo Code: same, older name
		}
	}
	return nil
}

// extensionPrefix starts top-level keys that toolbridge ignores, as Docker
// Compose does: a place for YAML anchors shared by several servers, such as
//
//	x-node: &node {command: npx}
//	mcpServers:
//	  memory: {<<: *node, args: [-y, "@modelcontextprotocol/server-memory"]}
const extensionPrefix = "x-"

// provenance maps a key path (keyPath.String) to the source that last set
// it, so validation errors can name the file, variable or flag to fix.
type provenance map[string]string

// sourceOf returns the source that set p or its nearest ancestor, or "".
func (pv provenance) sourceOf(p keyPath) string {
	for i := len(p); i > 0; i-- {
		if s, ok := pv[p[:i].String()]; ok {
			return s
		}
	}
	return ""
}

// decoder decodes one layer. Problems are collected, not returned, so one
// run reports all of them.
type decoder struct {
	source string
	// lookup expands ${VAR} references in strings; nil takes strings
	// literally (environment variables and flags were expanded by the shell).
	lookup lookupFunc
	// keepUnset leaves references to unset variables in place; it is on
	// while decoding a disabled server, whose variables need not exist.
	keepUnset bool
	prov      provenance
	// exp collects, where it is not nil, the values ${VAR} references
	// put into the config, by key path: see expansions.
	exp  *expansions
	errs []error
}

func (d *decoder) fail(p keyPath, format string, args ...any) {
	d.errs = append(d.errs, &Error{Source: d.source, Key: p.String(), Msg: fmt.Sprintf(format, args...)})
}

// value decodes raw onto dst, which must be settable.
func (d *decoder) value(p keyPath, raw any, dst reflect.Value) {
	if raw == nil {
		return
	}
	if len(p) > 0 {
		d.prov[p.String()] = d.source
	}
	switch dst.Type() {
	case durationType:
		if v, ok := d.duration(p, raw); ok {
			dst.SetInt(int64(v))
		}
		return
	case modeType:
		if s, ok := d.mode(p, raw); ok {
			dst.SetString(s)
		}
		return
	case trustType:
		// "trust: warn" is short for "trust: {mode: warn}"; YAML 1.1
		// readers turn "off" into false, so booleans mean pin and off.
		switch v := raw.(type) {
		case string:
			if s, ok := d.expand(p, v); ok {
				dst.FieldByName("Mode").SetString(s)
			}
			return
		case bool:
			dst.FieldByName("Mode").SetString(string(map[bool]TrustMode{true: TrustPin, false: TrustOff}[v]))
			return
		}
	}
	switch dst.Kind() {
	case reflect.Struct:
		d.object(p, raw, dst)
	case reflect.Map:
		d.mapping(p, raw, dst)
	case reflect.Slice:
		d.list(p, raw, dst)
	case reflect.String:
		if s, ok := d.str(p, raw); ok {
			dst.SetString(s)
		}
	case reflect.Bool:
		if b, ok := d.boolean(p, raw); ok {
			dst.SetBool(b)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, ok := d.integer(p, raw); ok {
			if dst.OverflowInt(n) {
				d.fail(p, "%d is too large", n)
				return
			}
			dst.SetInt(n)
		}
	case reflect.Float32, reflect.Float64:
		if f, ok := d.float(p, raw); ok {
			dst.SetFloat(f)
		}
	case reflect.Pointer:
		elem := reflect.New(dst.Type().Elem())
		if !dst.IsNil() {
			elem.Elem().Set(dst.Elem())
		}
		d.value(p, raw, elem.Elem())
		dst.Set(elem)
	case reflect.Interface:
		// Free-form values (a tool's fixed arguments): kept as JSON would
		// hold them, strings expanded like every other string.
		if v, ok := d.anyValue(p, raw); ok {
			dst.Set(reflect.ValueOf(&v).Elem())
		}
	default:
		// Only reachable if config.go gains a field of a new kind.
		d.fail(p, "internal error: cannot decode into %s", dst.Type())
	}
}

// anyValue decodes a free-form value into what encoding/json would give:
// objects become map[string]any, lists []any, strings are expanded.
func (d *decoder) anyValue(p keyPath, raw any) (any, bool) {
	switch v := raw.(type) {
	case nil:
		return nil, true
	case string:
		return d.expand(p, v)
	case bool, float64, float32, int, int64, uint64:
		return v, true
	}
	if m, ok := asMap(raw); ok {
		out := make(map[string]any, len(m))
		for k, e := range m {
			ev, ok := d.anyValue(p.key(k), e)
			if !ok {
				return nil, false
			}
			out[k] = ev
		}
		return out, true
	}
	if items, ok := asList(raw); ok {
		out := make([]any, len(items))
		for i, e := range items {
			ev, ok := d.anyValue(p.at(i), e)
			if !ok {
				return nil, false
			}
			out[i] = ev
		}
		return out, true
	}
	switch v := raw.(type) {
	case int8, int16, int32, uint, uint8, uint16, uint32:
		return v, true
	}
	d.fail(p, "expected a JSON value, got %s", describe(raw))
	return nil, false
}

// object decodes a map onto the struct dst, field by field, by koanf tag.
func (d *decoder) object(p keyPath, raw any, dst reflect.Value) {
	m, ok := asMap(raw)
	if !ok {
		d.fail(p, "expected an object, got %s", describe(raw))
		return
	}
	t := dst.Type()
	names := fieldNames(t)
	ignored := ignoredKeys(t)
	for _, k := range sortedKeys(m) {
		i := slices.Index(names, k)
		if i < 0 {
			if !slices.Contains(ignored, k) && !(t == configType && strings.HasPrefix(k, extensionPrefix)) {
				d.fail(p.key(k), "unknown key%s", didYouMean(k, names))
			}
			continue
		}
		d.value(p.key(k), m[k], dst.Field(i))
	}
}

// mapping decodes a map onto the map dst, merging with its entries.
func (d *decoder) mapping(p keyPath, raw any, dst reflect.Value) {
	m, ok := asMap(raw)
	if !ok {
		d.fail(p, "expected an object, got %s", describe(raw))
		return
	}
	t := dst.Type()
	if dst.IsNil() {
		dst.Set(reflect.MakeMapWithSize(t, len(m)))
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		kp := p.key(k)
		elem := reflect.New(t.Elem()).Elem()
		if old := dst.MapIndex(reflect.ValueOf(k)); old.IsValid() {
			elem.Set(old)
		}
		switch {
		case v == nil && t.Elem().Kind() == reflect.Struct:
			// "github:" with nothing under it in YAML: an empty entry,
			// which validation then reports as incomplete.
			d.prov[kp.String()] = d.source
		case v == nil:
			d.fail(kp, "expected %s, got null", kindName(t.Elem()))
			continue
		case t.Elem() == serverType && disabledServer(v):
			keep := d.keepUnset
			d.keepUnset = true
			d.value(kp, v, elem)
			d.keepUnset = keep
		default:
			d.value(kp, v, elem)
		}
		dst.SetMapIndex(reflect.ValueOf(k), elem)
	}
}

// list decodes a list onto the slice dst, replacing it whole.
func (d *decoder) list(p keyPath, raw any, dst reflect.Value) {
	items, ok := asList(raw)
	if !ok {
		d.fail(p, "expected a list, got %s", describe(raw))
		return
	}
	t := dst.Type()
	out := reflect.MakeSlice(t, len(items), len(items))
	for i, v := range items {
		if v == nil {
			d.fail(p.at(i), "expected %s, got null", kindName(t.Elem()))
			continue
		}
		d.value(p.at(i), v, out.Index(i))
	}
	dst.Set(out)
}

// str decodes a string. Numbers and booleans are taken as their text, so
// YAML's PORT: 8080 or DEBUG: true in an env map mean what the user wrote.
func (d *decoder) str(p keyPath, raw any) (string, bool) {
	switch v := raw.(type) {
	case string:
		return d.expand(p, v)
	case bool:
		return strconv.FormatBool(v), true
	}
	if f, ok := toFloat(raw); ok {
		if n, ok := toInt(raw); ok {
			return strconv.FormatInt(n, 10), true
		}
		return strconv.FormatFloat(f, 'g', -1, 64), true
	}
	d.fail(p, "expected a string, got %s", describe(raw))
	return "", false
}

// expand resolves ${VAR} references in a string read from a file.
func (d *decoder) expand(p keyPath, s string) (string, bool) {
	if d.lookup == nil {
		return s, true
	}
	out, refs, err := expandRefs(s, d.lookup, d.keepUnset)
	if err != nil {
		d.errs = append(d.errs, &Error{Source: d.source, Key: p.String(), Msg: err.Error(), err: err})
		return "", false
	}
	if len(refs) > 0 && d.exp != nil {
		*d.exp = append(*d.exp, expansion{path: p, refs: refs})
	}
	return out, true
}

// boolean decodes true/false, also written as yes/no, on/off or 1/0.
func (d *decoder) boolean(p keyPath, raw any) (bool, bool) {
	switch v := raw.(type) {
	case bool:
		return v, true
	case string:
		s, ok := d.expand(p, v)
		if !ok {
			return false, false
		}
		if b, ok := parseBool(s); ok {
			return b, true
		}
	default:
		if n, ok := toInt(raw); ok && (n == 0 || n == 1) {
			return n == 1, true
		}
	}
	d.fail(p, "expected true or false, got %s", describe(raw))
	return false, false
}

// integer decodes a whole number; numeric strings count, as env and flag
// values are always strings.
func (d *decoder) integer(p keyPath, raw any) (int64, bool) {
	if s, isStr := raw.(string); isStr {
		s, ok := d.expand(p, s)
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err == nil {
			return n, true
		}
		if f, ferr := strconv.ParseFloat(strings.TrimSpace(s), 64); ferr == nil {
			raw = f // report "1.5", not a parse error
		} else {
			raw = s
		}
	}
	if n, ok := toInt(raw); ok {
		return n, true
	}
	if f, ok := toFloat(raw); ok && f == math.Trunc(f) && !math.IsInf(f, 0) {
		d.fail(p, "%s is out of range", describe(raw))
		return 0, false
	}
	d.fail(p, "expected a whole number, got %s", describe(raw))
	return 0, false
}

// float decodes a finite number.
func (d *decoder) float(p keyPath, raw any) (float64, bool) {
	f, ok := toFloat(raw)
	if s, isStr := raw.(string); isStr {
		s, ok2 := d.expand(p, s)
		if !ok2 {
			return 0, false
		}
		var err error
		f, err = strconv.ParseFloat(strings.TrimSpace(s), 64)
		ok = err == nil
		raw = s
	}
	if !ok {
		d.fail(p, "expected a number, got %s", describe(raw))
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		d.fail(p, "expected a finite number, got %s", describe(raw))
		return 0, false
	}
	return f, true
}

// duration decodes a Go duration string such as "30s" or "1m30s". A bare
// number is refused (is 30 seconds or milliseconds?), except 0.
func (d *decoder) duration(p keyPath, raw any) (time.Duration, bool) {
	s, isStr := raw.(string)
	if !isStr {
		if f, ok := toFloat(raw); ok {
			if f == 0 {
				return 0, true
			}
			d.fail(p, `expected a duration with a unit such as "30s" or "1m30s", got %s (a bare number has no unit)`, describe(raw))
			return 0, false
		}
		d.fail(p, `expected a duration such as "30s" or "1m30s", got %s`, describe(raw))
		return 0, false
	}
	s, ok := d.expand(p, s)
	if !ok {
		return 0, false
	}
	s = strings.TrimSpace(s)
	if v, err := time.ParseDuration(s); err == nil {
		return v, true
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		d.fail(p, `expected a duration with a unit such as "30s" or "1m30s", got %s (a bare number has no unit)`, quoteShort(s))
		return 0, false
	}
	d.fail(p, `expected a duration such as "30s", "1m30s" or "500ms", got %s`, quoteShort(s))
	return 0, false
}

// mode decodes on/auto/off; booleans and their spellings map to on and off.
// Other values are kept, lowercased, for validation to report.
func (d *decoder) mode(p keyPath, raw any) (string, bool) {
	switch v := raw.(type) {
	case bool:
		return string(boolMode(v)), true
	case string:
		s, ok := d.expand(p, v)
		if !ok {
			return "", false
		}
		return normalizeMode(s), true
	}
	if n, ok := toInt(raw); ok && (n == 0 || n == 1) {
		return string(boolMode(n == 1)), true
	}
	if _, ok := toFloat(raw); ok {
		return describe(raw), true
	}
	d.fail(p, "expected on, auto or off, got %s", describe(raw))
	return "", false
}

// normalizeMode maps the accepted spellings of a mode to on, auto or off.
func normalizeMode(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == string(ModeAuto) {
		return s
	}
	if b, ok := parseBool(s); ok {
		return string(boolMode(b))
	}
	return s
}

func boolMode(b bool) Mode {
	if b {
		return ModeOn
	}
	return ModeOff
}

// parseBool accepts true/false, yes/no, on/off and 1/0 in any case.
func parseBool(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0":
		return false, true
	}
	return false, false
}

// disabledServer reports whether a raw server entry says disabled: true.
func disabledServer(raw any) bool {
	m, ok := asMap(raw)
	if !ok {
		return false
	}
	switch v := m["disabled"].(type) {
	case bool:
		return v
	case string:
		b, _ := parseBool(v)
		return b
	}
	return false
}

// asMap returns raw as a string-keyed map. YAML maps with non-string keys
// (1: x) arrive as map[any]any; their keys are used as text.
func asMap(raw any) (map[string]any, bool) {
	switch m := raw.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
		return out, true
	}
	return nil, false
}

// asList returns raw as a list, whatever slice type the parser used.
func asList(raw any) ([]any, bool) {
	if l, ok := raw.([]any); ok {
		return l, true
	}
	rv := reflect.ValueOf(raw)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// toFloat converts any Go number to float64.
func toFloat(v any) (float64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	}
	return 0, false
}

// toInt converts a Go number to int64 if it is whole and in range.
func toInt(v any) (int64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if rv.Uint() > math.MaxInt64 {
			return 0, false
		}
		return int64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		// 2^63 itself does not fit; every float64 below it that is whole does.
		if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			return 0, false
		}
		return int64(f), true
	}
	return 0, false
}

// fieldNames returns the koanf tag of each field of t, by field index.
func fieldNames(t reflect.Type) []string {
	names := make([]string, t.NumField())
	for i := range names {
		if !t.Field(i).IsExported() {
			// No key reaches an unexported field (Server's record of
			// its ${VAR} values), not even "".
			names[i] = "\x00unexported"
			continue
		}
		names[i] = t.Field(i).Tag.Get("koanf")
	}
	return names
}

// kindName names what a value of type t looks like in a config file.
func kindName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration"
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		return "an object"
	case t.Kind() == reflect.Slice:
		return "a list"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Interface:
		return "a value"
	}
	return "a number"
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
