package auth

import (
	"errors"
	"fmt"
	"log/slog"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"golang.org/x/crypto/bcrypt"
)

// Hasher hashes passwords and checks them against stored hashes. The member
// that receives a UserAdd or UserChangePassword hashes the password before
// proposing it, so that the log never holds a password and every member
// stores the same hash.
type Hasher interface {
	// Hash returns the hash to store for password.
	Hash(password string) ([]byte, error)
	// Compare returns nil when password matches hash.
	Compare(hash []byte, password string) error
}

// DefaultBcryptCost is etcd's --bcrypt-cost default.
const DefaultBcryptCost = bcrypt.DefaultCost

// DefaultHasher is the hasher a Store uses when its Config names none:
// bcrypt at etcd's default cost, so that hashes written by etcd and by
// cairn are interchangeable ("$2a$10$...").
var DefaultHasher Hasher = BcryptHasher{Cost: DefaultBcryptCost}

// BcryptHasher hashes with bcrypt, as etcd does.
type BcryptHasher struct {
	// Cost is bcrypt's cost, between bcrypt.MinCost and bcrypt.MaxCost.
	Cost int
}

// Hash returns the bcrypt hash of password.
func (h BcryptHasher) Hash(password string) ([]byte, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), h.Cost)
	if err != nil {
		return nil, fmt.Errorf("hash password: %w", err)
	}
	return hash, nil
}

// Compare checks password against a bcrypt hash: ErrAuthFailed when it
// does not match, another error when the hash is unusable.
func (h BcryptHasher) Compare(hash []byte, password string) error {
	err := bcrypt.CompareHashAndPassword(hash, []byte(password))
	if errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) {
		return ErrAuthFailed
	}
	return err
}

// HasherForCost hashes at --bcrypt-cost (0: the default); like etcd, it
// falls back to the default cost, with a warning, when the given one is out
// of range.
func HasherForCost(cost int, log *slog.Logger) Hasher {
	if cost == 0 {
		return DefaultHasher
	}
	if cost < bcrypt.MinCost || cost > bcrypt.MaxCost {
		log.Warn("use default bcrypt cost instead of the invalid given cost",
			"min-cost", bcrypt.MinCost, "max-cost", bcrypt.MaxCost, "default-cost", DefaultBcryptCost, "given-cost", cost)
		return DefaultHasher
	}
	return BcryptHasher{Cost: cost}
}

// HashPassword replaces the password of a UserAdd (unless it has none) or
// UserChangePassword request with its hash, on the member that receives
// it, so that the log holds only the hash. Other requests are left as
// they are.
func (s *Store) HashPassword(req *pb.InternalRaftRequest) error {
	var password *string
	var hashed *string
	switch {
	case req.AuthUserAdd != nil && !req.AuthUserAdd.GetOptions().GetNoPassword():
		password, hashed = &req.AuthUserAdd.Password, &req.AuthUserAdd.HashedPassword
	case req.AuthUserChangePassword != nil:
		password, hashed = &req.AuthUserChangePassword.Password, &req.AuthUserChangePassword.HashedPassword
	default:
		return nil
	}
	hash, err := s.Hasher().Hash(*password)
	if err != nil {
		return err
	}
	*hashed, *password = EncodeHashedPassword(hash), ""
	return nil
}
