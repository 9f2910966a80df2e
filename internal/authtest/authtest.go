// Package authtest holds test helpers for data dirs with authentication on.
package authtest

import (
	"path/filepath"
	"testing"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/store"
)

// SetPasswordsOffline gives existing users of the stopped member's data dir
// new passwords (name → password), hashed at bcrypt's lowest cost: a
// fixture's users can then log in with passwords the test knows.
func SetPasswordsOffline(t testing.TB, dataDir string, passwords map[string]string) {
	t.Helper()
	st, err := store.Open(store.Config{Backend: backend.Config{Path: filepath.Join(dataDir, "member", "snap", "db")}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := st.Write()
	defer w.End()
	for name, pw := range passwords {
		u, err := auth.UnmarshalAuthUser(w.Backend().Get(store.BucketAuthUsers, []byte(name)))
		if err != nil {
			t.Fatalf("user %s of the data dir: %v", name, err)
		}
		if u.Password, err = (auth.BcryptHasher{Cost: bcrypt.MinCost}).Hash(pw); err != nil {
			t.Fatal(err)
		}
		b, err := proto.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Backend().Put(store.BucketAuthUsers, []byte(name), b); err != nil {
			t.Fatal(err)
		}
	}
}
