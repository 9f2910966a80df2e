package auth

import "testing"

// FuzzJWTInfo feeds arbitrary tokens to a JWT member that has signed one
// token only: none may panic, and none but that token's encodings may pass
// for anyone.
func FuzzJWTInfo(f *testing.F) {
	j, _ := newTestJWT(f, "ES256", "a")
	want := Info{Username: "alice", Revision: 7}
	good, err := j.assign("", 0, want.Username, want.Revision)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{good, "", "a.b.c", "abcdefghijklmnop.12", good + "x", "eyJhbGciOiJub25lIn0.e30.", "e30.e30.e30"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		if info, ok := j.info(token, nil); ok && info != want {
			t.Fatalf("%q accepted as %+v; only %+v was ever signed", token, info, want)
		}
	})
}
