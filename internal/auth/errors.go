package auth

import "errors"

// Errors of the auth store, with etcd's texts; internal/api maps them to the
// gRPC errors (rpctypes) that clients expect.
var (
	ErrRootUserNotExist     = errors.New("auth: root user does not exist")
	ErrRootRoleNotExist     = errors.New("auth: root user does not have root role")
	ErrUserAlreadyExist     = errors.New("auth: user already exists")
	ErrUserEmpty            = errors.New("auth: user name is empty")
	ErrUserNotFound         = errors.New("auth: user not found")
	ErrRoleAlreadyExist     = errors.New("auth: role already exists")
	ErrRoleNotFound         = errors.New("auth: role not found")
	ErrRoleEmpty            = errors.New("auth: role name is empty")
	ErrPermissionNotGiven   = errors.New("auth: permission not given")
	ErrAuthFailed           = errors.New("auth: authentication failed, invalid user ID or password")
	ErrNoPasswordUser       = errors.New("auth: authentication failed, password was given for no password user")
	ErrPermissionDenied     = errors.New("auth: permission denied")
	ErrRoleNotGranted       = errors.New("auth: role is not granted to the user")
	ErrPermissionNotGranted = errors.New("auth: permission is not granted to the role")
	ErrAuthNotEnabled       = errors.New("auth: authentication is not enabled")
	ErrAuthOldRevision      = errors.New("auth: revision in header is old")
	ErrInvalidAuthToken     = errors.New("auth: invalid auth token")
	ErrInvalidAuthMgmt      = errors.New("auth: invalid auth management")
)

// Errors of the --auth-token option and of JWT signing, with etcd's texts;
// ErrKeyMismatch is a check etcd does not make (it starts with a pair whose
// tokens it then refuses).
var (
	ErrInvalidAuthOpts   = errors.New("auth: invalid auth options")
	ErrInvalidAuthMethod = errors.New("auth: invalid auth signature method")
	ErrMissingKey        = errors.New("auth: missing key data")
	ErrVerifyOnly        = errors.New("auth: token signing attempted with verify-only key")
	ErrKeyMustBePEM      = errors.New("invalid key: Key must be a PEM encoded PKCS1 or PKCS8 key")
	ErrKeyInvalid        = errors.New("key is invalid")
	ErrKeyMismatch       = errors.New("pub-key is not the public key of priv-key")
)
