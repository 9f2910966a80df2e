package auth

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
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

// TestUnknownUserCostsAsAWrongPassword: authenticating as a user that does
// not exist costs a bcrypt comparison at the store's cost, as a wrong
// password does, and fails alike, so that the time of the answer does not
// tell which users exist (it was 0.2 ms against 70-150 ms).
func TestUnknownUserCostsAsAWrongPassword(t *testing.T) {
	db := memDB{}
	if err := Init(db, db); err != nil {
		t.Fatal(err)
	}
	const cost = 7 // about 10 ms a comparison, well above the noise
	s := New(Config{Hasher: BcryptHasher{Cost: cost}})
	if err := s.Load(db); err != nil {
		t.Fatal(err)
	}
	add := &pb.InternalRaftRequest{AuthUserAdd: &pb.AuthUserAddRequest{Name: "a", Password: "pw", Options: &authpb.UserAddOptions{}}}
	if err := s.HashPassword(add); err != nil {
		t.Fatal(err)
	}
	apply(t, s, db, Info{}, add)
	for _, req := range []*pb.InternalRaftRequest{
		{AuthRoleAdd: &pb.AuthRoleAddRequest{Name: "root"}},
		{AuthUserAdd: &pb.AuthUserAddRequest{Name: "root", Options: &authpb.UserAddOptions{NoPassword: true}}},
		{AuthUserGrantRole: &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"}},
		{AuthEnable: &pb.AuthEnableRequest{}},
	} {
		apply(t, s, db, Info{}, req)
	}
	median := func(name string) (time.Duration, error) {
		var took []time.Duration
		var err error
		for range 5 {
			start := time.Now()
			_, err = s.CheckPassword(name, "wrong")
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		return took[2], err
	}
	s.CheckPassword("nobody", "wrong") // any one-off preparation is not what is measured
	wrong, wrongErr := median("a")
	unknown, unknownErr := median("nobody")
	t.Logf("median of 5: wrong password %v, unknown user %v", wrong, unknown)
	if wrongErr != ErrAuthFailed || unknownErr != wrongErr {
		t.Errorf("errors: wrong password %v, unknown user %v; want both %v", wrongErr, unknownErr, ErrAuthFailed)
	}
	if unknown*2 < wrong || wrong*2 < unknown {
		t.Errorf("an unknown user took %v, a wrong password %v: more than a factor 2 apart", unknown, wrong)
	}
}
