module github.com/gpuos/gpuos

go 1.26.8

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/tetratelabs/wazero v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
