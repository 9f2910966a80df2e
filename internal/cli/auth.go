package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/keyrange"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// addAuthCommands attaches auth, user and role with their subcommands.
func addAuthCommands(root *cobra.Command, g *globalOptions) {
	auth := &cobra.Command{Use: "auth <enable or disable>", Short: "Enable or disable authentication"}
	auth.AddCommand(newAuthEnableCommand(g), newAuthDisableCommand(g), newAuthStatusCommand(g))

	user := &cobra.Command{Use: "user <subcommand>", Short: "User related commands"}
	user.AddCommand(newUserAddCommand(g), newUserDeleteCommand(g), newUserGetCommand(g), newUserListCommand(g),
		newUserPasswdCommand(g), newUserGrantRoleCommand(g), newUserRevokeRoleCommand(g))

	role := &cobra.Command{Use: "role <subcommand>", Short: "Role related commands"}
	role.AddCommand(newRoleAddCommand(g), newRoleDeleteCommand(g), newRoleGetCommand(g), newRoleListCommand(g),
		newRoleGrantPermissionCommand(g), newRoleRevokePermissionCommand(g))

	addToGroup(root, authGroup, auth, user, role)
}

// authCommand builds a command of the auth family: it checks the number of
// arguments, then calls run with a client and a command context and prints
// what run returns.
func authCommand(g *globalOptions, use, short, example string, nargs int, usage string,
	run func(ctx context.Context, c *client.Client, args []string) (any, error)) *cobra.Command {
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Example: example,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != nargs {
				return cmderr.BadArgs("%s", usage)
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				result, err := run(ctx, c, args)
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(result)
			})
		},
	}
}

func newAuthEnableCommand(g *globalOptions) *cobra.Command {
	return authCommand(g, "enable", "Enables authentication",
		`  cairn user add root && cairn user grant-role root root
  cairn auth enable`,
		0, "auth enable command does not accept any arguments",
		func(ctx context.Context, c *client.Client, _ []string) (any, error) {
			_, err := c.Auth.AuthEnable(ctx, &pb.AuthEnableRequest{})
			if errors.Is(err, rpctypes.ErrRootRoleNotExist) {
				// Enabling needs a root user with the root role: create the
				// role and grant it, as etcdctl does, then try again.
				if _, err = c.Auth.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: "root"}); err != nil {
					return nil, err
				}
				if _, err = c.Auth.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"}); err != nil {
					return nil, err
				}
				_, err = c.Auth.AuthEnable(ctx, &pb.AuthEnableRequest{})
			}
			return printer.Message("Authentication Enabled"), err
		})
}

func newAuthDisableCommand(g *globalOptions) *cobra.Command {
	return authCommand(g, "disable", "Disables authentication",
		"  cairn --user root auth disable",
		0, "auth disable command does not accept any arguments",
		func(ctx context.Context, c *client.Client, _ []string) (any, error) {
			_, err := c.Auth.AuthDisable(ctx, &pb.AuthDisableRequest{})
			return printer.Message("Authentication Disabled"), err
		})
}

func newAuthStatusCommand(g *globalOptions) *cobra.Command {
	return authCommand(g, "status", "Returns authentication status",
		`  cairn auth status
  cairn auth status -w json`,
		0, "auth status command does not accept any arguments",
		func(ctx context.Context, c *client.Client, _ []string) (any, error) {
			resp, err := c.Auth.AuthStatus(ctx, &pb.AuthStatusRequest{})
			return &printer.AuthStatusResult{Resp: resp}, err
		})
}

func newUserAddCommand(g *globalOptions) *cobra.Command {
	var noPassword, interactive bool
	var newPassword string
	cmd := &cobra.Command{
		Use:   "add <user name or user:password> [options]",
		Short: "Adds a new user",
		Example: `  cairn user add alice:secret
  cairn user add alice            # asks for the password twice
  echo secret | cairn user add alice --interactive=false`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmderr.BadArgs("user add command requires user name as its argument")
			}
			name, password, hasPassword := strings.Cut(args[0], ":")
			if name == "" {
				return cmderr.BadArgs("empty user name is not allowed")
			}
			switch {
			case noPassword, hasPassword:
			case newPassword != "":
				password = newPassword
			default:
				var err error
				if password, err = askPassword(cmd, name, interactive); err != nil {
					return err
				}
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				req := &pb.AuthUserAddRequest{Name: name, Password: password,
					Options: &authpb.UserAddOptions{NoPassword: noPassword}}
				resp, err := c.Auth.UserAdd(ctx, req)
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.AuthResult{Text: fmt.Sprintf("User %s created", name), Resp: resp})
			})
		},
	}
	cmd.Flags().BoolVar(&noPassword, "no-password", false, "Create a user without password (CN based auth only)")
	cmd.Flags().BoolVar(&interactive, "interactive", true, "Read password from stdin instead of interactive terminal")
	cmd.Flags().StringVar(&newPassword, "new-user-password", "", "Supply password from the command line flag")
	return cmd
}

// askPassword reads a user's new password: twice, from the terminal, in
// interactive mode; once, as a line of stdin, otherwise.
func askPassword(cmd *cobra.Command, name string, interactive bool) (string, error) {
	if !interactive {
		password, err := readLine(cmd.InOrStdin())
		if err != nil {
			return "", cmderr.BadArgs("failed to ask password: %v", err)
		}
		return password, nil
	}
	password, err := readPassword(cmd, fmt.Sprintf("Password of %s: ", name))
	if err != nil {
		return "", cmderr.BadArgs("failed to ask password: %v", err)
	}
	if password == "" {
		return "", cmderr.BadArgs("empty password")
	}
	again, err := readPassword(cmd, fmt.Sprintf("Type password of %s again for confirmation: ", name))
	if err != nil {
		return "", cmderr.BadArgs("failed to ask password: %v", err)
	}
	if again != password {
		return "", cmderr.BadArgs("given passwords are different")
	}
	return password, nil
}

func newUserDeleteCommand(g *globalOptions) *cobra.Command {
	return authCommand(g, "delete <user name>", "Deletes a user",
		"  cairn user delete alice",
		1, "user delete command requires user name as its argument",
		func(ctx context.Context, c *client.Client, args []string) (any, error) {
			resp, err := c.Auth.UserDelete(ctx, &pb.AuthUserDeleteRequest{Name: args[0]})
			return &printer.AuthResult{Text: fmt.Sprintf("User %s deleted", args[0]), Resp: resp}, err
		})
}

func newUserGetCommand(g *globalOptions) *cobra.Command {
	var detail bool
	cmd := &cobra.Command{
		Use:   "get <user name> [options]",
		Short: "Gets detailed information of a user",
		Example: `  cairn user get alice
  cairn user get alice --detail`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmderr.BadArgs("user get command requires user name as its argument")
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.Auth.UserGet(ctx, &pb.AuthUserGetRequest{Name: args[0]})
				if err != nil {
					return err
				}
				p := g.printer(cmd)
				if !detail {
					return p.Print(&printer.UserGetResult{Name: args[0], Resp: resp})
				}
				// The user's name, then each role in the format asked for,
				// printed as it arrives.
				p.Linef("User: %s", args[0])
				for _, role := range resp.GetRoles() {
					p.Line()
					r, err := c.Auth.RoleGet(ctx, &pb.AuthRoleGetRequest{Role: role})
					if err != nil {
						return err
					}
					if err := p.Print(&printer.RoleGetResult{Name: role, Resp: r}); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&detail, "detail", false, "Show permissions of roles granted to the user")
	return cmd
}

func newUserListCommand(g *globalOptions) *cobra.Command {
	return authCommand(g, "list", "Lists all users",
		"  cairn user list",
		0, "user list command requires no arguments",
		func(ctx context.Context, c *client.Client, _ []string) (any, error) {
			resp, err := c.Auth.UserList(ctx, &pb.AuthUserListRequest{})
			return &printer.UserListResult{Resp: resp}, err
		})
}

func newUserPasswdCommand(g *globalOptions) *cobra.Command {
	var interactive bool
	cmd := &cobra.Command{
		Use:   "passwd <user name> [options]",
		Short: "Changes password of user",
		Example: `  cairn user passwd alice
  echo newpassword | cairn user passwd alice --interactive=false`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmderr.BadArgs("user passwd command requires user name as its argument")
			}
			password, err := askPassword(cmd, args[0], interactive)
			if err != nil {
				return err
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.Auth.UserChangePassword(ctx, &pb.AuthUserChangePasswordRequest{Name: args[0], Password: password})
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.AuthResult{Text: "Password updated", Resp: resp})
			})
		},
	}
	cmd.Flags().BoolVar(&interactive, "interactive", true, "If true, read password from stdin instead of interactive terminal")
	return cmd
}

func newUserGrantRoleCommand(g *globalOptions) *cobra.Command {
	return authCommand(g, "grant-role <user name> <role name>", "Grants a role to a user",
		"  cairn user grant-role alice reader",
		2, "user grant command requires user name and role name as its argument",
		func(ctx context.Context, c *client.Client, args []string) (any, error) {
			resp, err := c.Auth.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: args[0], Role: args[1]})
			return &printer.AuthResult{Text: fmt.Sprintf("Role %s is granted to user %s", args[1], args[0]), Resp: resp}, err
		})
}

func newUserRevokeRoleCommand(g *globalOptions) *cobra.Command {
	return authCommand(g, "revoke-role <user name> <role name>", "Revokes a role from a user",
		"  cairn user revoke-role alice reader",
		2, "user revoke-role requires user name and role name as its argument",
		func(ctx context.Context, c *client.Client, args []string) (any, error) {
			resp, err := c.Auth.UserRevokeRole(ctx, &pb.AuthUserRevokeRoleRequest{Name: args[0], Role: args[1]})
			return &printer.AuthResult{Text: fmt.Sprintf("Role %s is revoked from user %s", args[1], args[0]), Resp: resp}, err
		})
}

func newRoleAddCommand(g *globalOptions) *cobra.Command {
	return authCommand(g, "add <role name>", "Adds a new role",
		"  cairn role add reader",
		1, "role add command requires role name as its argument",
		func(ctx context.Context, c *client.Client, args []string) (any, error) {
			resp, err := c.Auth.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: args[0]})
			return &printer.AuthResult{Text: fmt.Sprintf("Role %s created", args[0]), Resp: resp}, err
		})
}

func newRoleDeleteCommand(g *globalOptions) *cobra.Command {
	return authCommand(g, "delete <role name>", "Deletes a role",
		"  cairn role delete reader",
		1, "role delete command requires role name as its argument",
		func(ctx context.Context, c *client.Client, args []string) (any, error) {
			resp, err := c.Auth.RoleDelete(ctx, &pb.AuthRoleDeleteRequest{Role: args[0]})
			return &printer.AuthResult{Text: fmt.Sprintf("Role %s deleted", args[0]), Resp: resp}, err
		})
}

func newRoleGetCommand(g *globalOptions) *cobra.Command {
	return authCommand(g, "get <role name>", "Gets detailed information of a role",
		`  cairn role get reader
  cairn role get reader -w json`,
		1, "role get command requires role name as its argument",
		func(ctx context.Context, c *client.Client, args []string) (any, error) {
			resp, err := c.Auth.RoleGet(ctx, &pb.AuthRoleGetRequest{Role: args[0]})
			return &printer.RoleGetResult{Name: args[0], Resp: resp}, err
		})
}

func newRoleListCommand(g *globalOptions) *cobra.Command {
	return authCommand(g, "list", "Lists all roles",
		"  cairn role list",
		0, "role list command requires no arguments",
		func(ctx context.Context, c *client.Client, _ []string) (any, error) {
			resp, err := c.Auth.RoleList(ctx, &pb.AuthRoleListRequest{})
			return &printer.RoleListResult{Resp: resp}, err
		})
}

// permissionRange is the key range flags of the permission commands.
type permissionRange struct {
	prefix  bool
	fromKey bool
}

// keys returns the key and range end that args and the flags describe.
func (o permissionRange) keys(args []string) (key, rangeEnd string, err error) {
	if o.prefix && o.fromKey {
		return "", "", cmderr.BadArgs("--from-key and --prefix flags are mutually exclusive")
	}
	key = args[0]
	switch {
	case len(args) > 1 && o.prefix:
		return "", "", cmderr.BadArgs("unexpected endkey argument with --prefix flag")
	case len(args) > 1 && o.fromKey:
		return "", "", cmderr.BadArgs("unexpected endkey argument with --from-key flag")
	case len(args) > 1:
		rangeEnd = args[1]
	case o.prefix && key == "":
		key, rangeEnd = "\x00", "\x00"
	case o.prefix:
		rangeEnd = string(keyrange.PrefixEnd([]byte(key)))
	case o.fromKey:
		rangeEnd = "\x00"
	}
	return key, rangeEnd, nil
}

func (o *permissionRange) addFlags(cmd *cobra.Command, verb string) {
	cmd.Flags().BoolVar(&o.prefix, "prefix", false, verb+" a prefix permission")
	cmd.Flags().BoolVar(&o.fromKey, "from-key", false, verb+" a permission of keys that are greater than or equal to the given key using byte compare")
}

func newRoleGrantPermissionCommand(g *globalOptions) *cobra.Command {
	var o permissionRange
	cmd := &cobra.Command{
		Use:   "grant-permission [options] <role name> <permission type> <key> [endkey]",
		Short: "Grants a key to a role",
		Example: `  cairn role grant-permission reader read /config/ --prefix
  cairn role grant-permission writer readwrite /jobs/a /jobs/z`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 3 || len(args) > 4 {
				return cmderr.BadArgs("role grant command requires role name, permission type, and key [endkey] as its argument")
			}
			permType, ok := authpb.Permission_Type_value[strings.ToUpper(args[1])]
			if !ok {
				return cmderr.BadArgs("invalid permission type: %s", args[1])
			}
			key, rangeEnd, err := o.keys(args[2:])
			if err != nil {
				return err
			}
			perm := &authpb.Permission{PermType: authpb.Permission_Type(permType), Key: []byte(key), RangeEnd: []byte(rangeEnd)}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.Auth.RoleGrantPermission(ctx, &pb.AuthRoleGrantPermissionRequest{Name: args[0], Perm: perm})
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.AuthResult{Text: fmt.Sprintf("Role %s updated", args[0]), Resp: resp})
			})
		},
	}
	o.addFlags(cmd, "grant")
	return cmd
}

func newRoleRevokePermissionCommand(g *globalOptions) *cobra.Command {
	var o permissionRange
	cmd := &cobra.Command{
		Use:   "revoke-permission <role name> <key> [endkey]",
		Short: "Revokes a key from a role",
		Example: `  cairn role revoke-permission reader /config/
  cairn role revoke-permission reader /jobs/ --prefix
  cairn role revoke-permission reader a z`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 || len(args) > 3 {
				return cmderr.BadArgs("role revoke-permission command requires role name and key [endkey] as its argument")
			}
			key, rangeEnd, err := o.keys(args[1:])
			if err != nil {
				return err
			}
			return g.withClient(cmd, func(c *client.Client) error {
				ctx, cancel := g.commandContext(cmd)
				defer cancel()
				resp, err := c.Auth.RoleRevokePermission(ctx, &pb.AuthRoleRevokePermissionRequest{
					Role: args[0], Key: []byte(key), RangeEnd: []byte(rangeEnd)})
				if err != nil {
					return err
				}
				return g.printer(cmd).Print(&printer.AuthResult{Text: revokedText(args[0], key, rangeEnd), Resp: resp})
			})
		},
	}
	o.addFlags(cmd, "revoke")
	return cmd
}

// revokedText says which permission was revoked from role.
func revokedText(role, key, rangeEnd string) string {
	switch rangeEnd {
	case "":
		return fmt.Sprintf("Permission of key %s is revoked from role %s", key, role)
	case "\x00":
		return fmt.Sprintf("Permission of range [%s, <open ended> is revoked from role %s", key, role)
	}
	return fmt.Sprintf("Permission of range [%s, %s) is revoked from role %s", key, rangeEnd, role)
}
