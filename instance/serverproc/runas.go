package serverproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// OSUser is the unprivileged account servers run as when firedrill itself
// runs as root.
const OSUser = "firedrill"

// Credential returns the credential to run a server (and its initializer)
// with: nil (the current user) unless we are root, in which case it is the
// OSUser account, created on first use. server names the database in
// messages ("PostgreSQL", "MariaDB").
func Credential(ctx context.Context, server string, progress func(string, ...any)) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	account, err := lookupOrCreateUser(ctx, server, progress)
	if err != nil {
		return nil, err
	}
	uid, err := strconv.ParseUint(account.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s has a non-numeric uid %q: %w", OSUser, account.Uid, err)
	}
	gid, err := strconv.ParseUint(account.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s has a non-numeric gid %q: %w", OSUser, account.Gid, err)
	}
	// Groups is empty on purpose: the server must not keep root's
	// supplementary groups.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// lookupOrCreateUser finds the OSUser account or creates it with useradd.
// Several firedrill processes may race to create it, so a failed useradd is
// followed by another look-up before giving up.
func lookupOrCreateUser(ctx context.Context, server string, progress func(string, ...any)) (*user.User, error) {
	account, err := user.Lookup(OSUser)
	if err == nil {
		return account, nil
	}
	var unknown user.UnknownUserError
	if !errors.As(err, &unknown) {
		return nil, fmt.Errorf("look up user %s: %w", OSUser, err)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("create user %s: %w", OSUser, ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
		out, err := exec.CommandContext(ctx, "useradd", "--system", "--no-create-home",
			"--shell", "/usr/sbin/nologin", OSUser).CombinedOutput()
		if account, lookErr := user.Lookup(OSUser); lookErr == nil {
			if err == nil && progress != nil {
				progress("created system user %s to run %s (it refuses to run as root)", OSUser, server)
			}
			return account, nil
		}
		if err != nil {
			lastErr = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
		} else {
			lastErr = fmt.Errorf("useradd succeeded but user %s still cannot be looked up", OSUser)
		}
	}
	return nil, fmt.Errorf("%s refuses to run as root, so firedrill runs it as the system user %q, "+
		"which is missing and could not be created (useradd: %v); create it yourself with "+
		"`useradd --system --no-create-home --shell /usr/sbin/nologin %s`, or run firedrill as a non-root user",
		server, OSUser, lastErr, OSUser)
}

// HandOver makes dir usable by the account in cred: it checks that the
// account can walk down to dir (a temp root such as a 0700 directory of
// root's would let us create the instance but not let the server use it,
// and servers complain about that obscurely) and gives dir to it. A nil
// cred (not root) needs nothing.
func HandOver(dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	if err := CheckReachable(dir, cred); err != nil {
		return err
	}
	return GiveTo(dir, cred)
}

// GiveTo makes the account in cred the owner of path (a file or directory
// the server writes, or reads when only it may); a nil cred (not root)
// needs nothing.
func GiveTo(path string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
		return fmt.Errorf("hand %s to user %s: %w", path, OSUser, err)
	}
	return nil
}

// CheckReachable reports whether the account in cred can walk down to dir.
func CheckReachable(dir string, cred *syscall.Credential) error {
	for ancestor := filepath.Dir(dir); ; ancestor = filepath.Dir(ancestor) {
		info, err := os.Stat(ancestor)
		if err != nil {
			return fmt.Errorf("check access to %s: %w", ancestor, err)
		}
		perm := info.Mode().Perm()
		var allowed bool
		if stat, ok := info.Sys().(*syscall.Stat_t); ok {
			switch {
			case stat.Uid == cred.Uid:
				allowed = perm&0o100 != 0
			case stat.Gid == cred.Gid:
				allowed = perm&0o010 != 0
			default:
				allowed = perm&0o001 != 0
			}
		} else {
			allowed = perm&0o001 != 0
		}
		if !allowed {
			return fmt.Errorf("the server runs as user %s, which may not enter %s (mode %v); "+
				"set TMPDIR to a directory everyone may enter, such as /tmp", OSUser, ancestor, perm)
		}
		if parent := filepath.Dir(ancestor); parent == ancestor {
			return nil
		}
	}
}
