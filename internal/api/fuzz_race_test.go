//go:build race

package api

// fuzzSlowdown stretches the fuzz targets' bounds under the race detector,
// which makes a request of 1.5 MiB some ten times slower.
const fuzzSlowdown = 5
