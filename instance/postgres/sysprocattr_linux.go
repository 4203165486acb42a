package postgres

import "syscall"

// serverProcAttr makes a child (initdb or the postmaster) die with us and
// keeps it out of the terminal's process group.
//
// Pdeathsig: if firedrill is killed, even by SIGKILL, the kernel sends the
// child parentDeathSignal (SIGQUIT makes the postmaster do an immediate
// shutdown of all its backends), so no server outlives its owner.
// Setpgid: a Ctrl-C in the terminal goes to the foreground process group;
// the server is in its own group, so firedrill alone decides when and how it
// stops (and can kill the whole group, backends included).
func serverProcAttr(cred *syscall.Credential, parentDeathSignal syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Credential: cred,
		Pdeathsig:  parentDeathSignal,
		Setpgid:    true,
	}
}
