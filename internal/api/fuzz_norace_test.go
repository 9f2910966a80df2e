//go:build !race

package api

// fuzzSlowdown stretches the fuzz targets' bounds (see fuzz_race_test.go).
const fuzzSlowdown = 1
