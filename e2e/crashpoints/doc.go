// Package crashpoints crashes real `cairn serve` members at the crash points
// of pkg/failpoint, under a write load, and checks that each crashed member
// restarts, catches up and agrees with the others, with no acknowledged
// write lost. Its tests need the failpoints build tag:
//
//	go test -tags failpoints ./e2e/crashpoints/
//
// or scripts/crashpoints.sh. Without the tag the package is empty.
package crashpoints
