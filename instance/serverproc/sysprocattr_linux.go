package serverproc

import "syscall"

// ProcAttr makes a child (an initializer or the server) die with us and
// keeps it out of the terminal's process group.
//
// Pdeathsig: if firedrill is killed, even by SIGKILL, the kernel sends the
// child parentDeathSignal (the caller picks the one that stops its server
// soonest, such as SIGQUIT for PostgreSQL's immediate shutdown), so no
// server outlives its owner. Go sets it after switching to cred, which
// would otherwise clear it.
// Setpgid: a Ctrl-C in the terminal goes to the foreground process group;
// the server is in its own group, so firedrill alone decides when and how it
// stops (and can kill the whole group).
func ProcAttr(cred *syscall.Credential, parentDeathSignal syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Credential: cred,
		Pdeathsig:  parentDeathSignal,
		Setpgid:    true,
	}
}
