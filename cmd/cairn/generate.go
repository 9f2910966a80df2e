package main

// The completion scripts and man pages of the source tree are generated
// from the command tree.
//go:generate go run ../../internal/gendocs -dir ../..
