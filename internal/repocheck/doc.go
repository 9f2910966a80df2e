// Package repocheck holds tests of the repository as a whole rather than of
// one package: that it stands on its own, with no file naming a path
// outside it, and that its files speak of the product, not of how the work
// on it was organised. It has no code of its own, only tests.
package repocheck
