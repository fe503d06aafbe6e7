package semantic

// WithFloat32 makes a ranker keep float32 vectors, for the harness to
// compare with the int8 ones.
func WithFloat32(o Options) Options {
	o.float32 = true
	return o
}

// WithTuning sets the fusion's constants, for the harness to compare
// them: clause is a clause's share of a tool's semantic score (0 or less
// ignores the clauses), termsFull the terms from which a request gets the
// full weight (0 always).
func WithTuning(o Options, clause float64, termsFull int) Options {
	o.tune = &tuning{clause: clause, termsFull: termsFull}
	return o
}
