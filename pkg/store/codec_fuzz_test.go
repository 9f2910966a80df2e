package store

import (
	"bytes"
	"testing"
)

func FuzzParseRevisionKey(f *testing.F) {
	f.Add(RevisionKey(Revision{Main: 5, Sub: 1}, false))
	f.Add(RevisionKey(Revision{Main: 1 << 40}, true))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rev, tomb, err := ParseRevisionKey(b)
		if err != nil {
			return
		}
		if again := RevisionKey(rev, tomb); !bytes.Equal(again, b) {
			t.Fatalf("%x decodes to %v/%v, which encodes to %x", b, rev, tomb, again)
		}
	})
}
