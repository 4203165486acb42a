//go:build !linux

package serverproc

import "syscall"

// ProcAttr keeps a child out of the terminal's process group. Outside
// Linux there is no parent-death signal: a server whose owner is killed is
// left to the stale-directory reaper of the next start.
func ProcAttr(cred *syscall.Credential, _ syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true}
}
