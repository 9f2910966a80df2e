package auth

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestBcryptHasher(t *testing.T) {
	h := BcryptHasher{Cost: bcrypt.MinCost}
	a, err := h.Hash("secret")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(a), "$2a$04$") {
		t.Errorf("hash %q is not etcd's bcrypt form", a)
	}
	if err := h.Compare(a, "secret"); err != nil {
		t.Errorf("right password: %v", err)
	}
	if err := h.Compare(a, "Secret"); !errors.Is(err, ErrAuthFailed) {
		t.Errorf("wrong password: %v", err)
	}
	if err := h.Compare([]byte("plain"), "plain"); err == nil {
		t.Error("a malformed hash matched")
	}
	// etcd's hash of alice's (unknown) password, from the fixture.
	if err := DefaultHasher.Compare([]byte(fixtureAliceHash), "guess"); !errors.Is(err, ErrAuthFailed) {
		t.Errorf("etcd's bcrypt hash with a wrong password: %v", err)
	}
	if got, _ := DefaultHasher.Hash("x"); !strings.HasPrefix(string(got), "$2a$10$") {
		t.Errorf("default hash %q, want cost 10 as etcd's", got)
	}
}
