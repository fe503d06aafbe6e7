package semantic

// WithFloat32 makes a ranker keep float32 vectors, for the harness to
// compare with the int8 ones.
func WithFloat32(o Options) Options {
	o.float32 = true
	return o
}
