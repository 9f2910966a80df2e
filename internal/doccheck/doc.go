// Package doccheck holds no code, only tests: they run every command example
// of README.md and docs/*.md against a freshly built cairn and a real
// `cairn serve`, check that the documents' relative links lead somewhere, and
// that the README's test command is the one CI runs. The conventions the
// examples follow are at the top of docs/development.md.
package doccheck
