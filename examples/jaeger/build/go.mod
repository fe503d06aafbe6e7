// A module of its own, so Jaeger's large dependency graph never enters
// toolbridge's go.mod. run.sh builds bin/jaeger from it.
module toolbridge.local/examples/jaeger/build

go 1.26

tool github.com/jaegertracing/jaeger/cmd/jaeger

require github.com/jaegertracing/jaeger v1.76.0

// Jaeger v1.76.0's dependency graph does not resolve without pinning the
// old github.com/Shopify/sarama path to v1.33.0.
replace github.com/Shopify/sarama => github.com/Shopify/sarama v1.33.0
