// Package keyrange is the key ranges of the commands' arguments, as
// etcdctl reads them: a key and an optional range end, --prefix and
// --from-key. It imports only cmderr, for the errors of bad arguments.
package keyrange

import "github.com/cairnkv/cairn/internal/cliutil/cmderr"

// PrefixEnd is the end of the range of keys that start with prefix.
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte{}, prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0} // every byte is 0xff: up to the end of the key space
}

// Parse turns a key, an optional range end and the --prefix/--from-key
// flags into the [key, rangeEnd) of a request. command names the command
// in error messages.
func Parse(command string, args []string, prefix, fromKey bool) (key, rangeEnd []byte, err error) {
	if len(args) == 0 || len(args) > 2 {
		return nil, nil, cmderr.BadArgs("%s command needs one argument as key and an optional argument as range_end", command)
	}
	if prefix && fromKey {
		return nil, nil, cmderr.BadArgs("`--prefix` and `--from-key` cannot be set at the same time, choose one")
	}
	if (prefix || fromKey) && len(args) == 2 {
		return nil, nil, cmderr.BadArgs("too many arguments, only accept one argument when `--prefix` or `--from-key` is set")
	}
	key = []byte(args[0])
	switch {
	case len(args) == 2:
		rangeEnd = []byte(args[1])
	case prefix && len(key) == 0:
		key, rangeEnd = []byte{0}, []byte{0}
	case prefix:
		rangeEnd = PrefixEnd(key)
	case fromKey:
		if len(key) == 0 {
			key = []byte{0}
		}
		rangeEnd = []byte{0}
	}
	return key, rangeEnd, nil
}
