module github.com/firedrill/firedrill/bench/vs-vegeta

go 1.26.8

require (
	github.com/firedrill/firedrill v0.0.0
	github.com/tsenart/vegeta/v12 v12.13.0
)

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/rs/dnscache v0.0.0-20230804202142-fc85eb664529 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

// The firedrill beside this bench, not a published one.
replace github.com/firedrill/firedrill => ../..
