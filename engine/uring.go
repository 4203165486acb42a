package engine

import (
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/firedrill/firedrill/engine/sockio"
)

// A loop's turn resumes every client whose reply came, and each sends its
// next request. Written one by one, each write wakes a server thread that
// the kernel often runs at once on the loop's core: the loop was switched
// out on its way back from a third of its writes, and its other clients'
// requests waited behind that thread. The send ring holds a turn's small
// requests and sends them in one io_uring_enter at the turn's end: one
// system call for the turn (3.6 requests at -j 2, 8 clients, select-only)
// instead of one each, and the loop is switched out at most once, after
// all of them are on their way. With 8 clients on one loop, select-only
// -M prepared cost 5.4 µs of client CPU per transaction instead of 6.6
// for pgbench (docs/engine.md has the measures).
//
// Where io_uring is not to be had (kernels before 5.18, a sandbox that
// forbids it, io_uring_disabled), or FIREDRILL_SEND_RING=off asks, the
// loop writes each request at once, as before.

// sendRingOn says event loops set up a send ring; FIREDRILL_SEND_RING=off
// turns it off (to compare, or where io_uring misbehaves).
var sendRingOn = os.Getenv("FIREDRILL_SEND_RING") != "off"

// ringHoldsAll makes loops hold every request, also in turns of one reply
// and outside turns (a test of a request refused by a full socket).
var ringHoldsAll = false

const (
	sysIOUringSetup = 425
	sysIOUringEnter = 426

	ioringOpSend         = 26
	ioringOffSQRing      = 0
	ioringOffSQEs        = 0x10000000
	ioringFeatSingleMmap = 1 << 0
	ioringSetupSubmitAll = 1 << 7

	ioringEnterGetEvents = 1 << 0

	sendRingEntries = 256
	// maxArena bounds the bytes a turn holds; past it requests are
	// written at once.
	maxArena = 256 << 10
)

// The kernel's structures (include/uapi/linux/io_uring.h), checked for
// size below.
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringRingOffsets
	cqOff                                                                  uringRingOffsets
}

// uringRingOffsets is io_sqring_offsets (head, tail, ring_mask,
// ring_entries, flags, dropped, array) or io_cqring_offsets (head, tail,
// ring_mask, ring_entries, overflow, cqes, flags): the same layout.
type uringRingOffsets struct {
	head, tail, ringMask, ringEntries, f4, f5, f6, resv1 uint32
	userAddr                                             uint64
}

var (
	_ [unsafe.Sizeof(uringParams{}) - 120]byte
	_ [120 - unsafe.Sizeof(uringParams{})]byte
	_ [unsafe.Sizeof(uringSQE{}) - 64]byte
	_ [64 - unsafe.Sizeof(uringSQE{})]byte
	_ [unsafe.Sizeof(uringCQE{}) - 16]byte
	_ [16 - unsafe.Sizeof(uringCQE{})]byte
)

type uringSQE struct {
	opcode   uint8
	flags    uint8
	ioprio   uint16
	fd       int32
	off      uint64
	addr     uint64
	len      uint32
	opFlags  uint32
	userData uint64
	bufIndex uint16
	pers     uint16
	spliceFD int32
	addr3    uint64
	pad      uint64
}

type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// held is one request the ring holds: its bytes in the ring's arena.
type held struct {
	c         *client
	conn      *sockio.Conn
	off, size int
}

type sendRing struct {
	fd              int
	ringMem, sqeMem []byte
	sqHead, sqTail  *uint32
	sqMask          uint32
	cqHead, cqTail  *uint32
	cqMask          uint32
	sqes            []uringSQE
	cqes            []uringCQE
	arena           []byte // the held requests' bytes, copied
	held            []held
	short           []held // sent in part or not at all, for their clients to finish
	got             []bool // per held request: its completion was read
	broken          bool   // io_uring_enter failed: the loop writes at once from now on
	// enters and sent count the ring's system calls and the requests
	// they carried; shortSends the requests that did not all go.
	enters, sent, shortSends int64
}

// newSendRing sets up a ring, or returns nil where io_uring is not to be
// had (an old kernel, a sandbox, io_uring_disabled).
func newSendRing() *sendRing {
	var p uringParams
	p.flags = ioringSetupSubmitAll
	fd, _, errno := syscall.RawSyscall(sysIOUringSetup, sendRingEntries, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil
	}
	if p.features&ioringFeatSingleMmap == 0 {
		syscall.Close(int(fd))
		return nil
	}
	size := max(p.sqOff.f6+p.sqEntries*4, p.cqOff.f5+p.cqEntries*uint32(unsafe.Sizeof(uringCQE{})))
	ring, err := syscall.Mmap(int(fd), ioringOffSQRing, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		syscall.Close(int(fd))
		return nil
	}
	sqeMem, err := syscall.Mmap(int(fd), ioringOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(uringSQE{})), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		syscall.Munmap(ring)
		syscall.Close(int(fd))
		return nil
	}
	base := unsafe.Pointer(&ring[0])
	at := func(off uint32) unsafe.Pointer { return unsafe.Add(base, off) }
	r := &sendRing{
		fd: int(fd), ringMem: ring, sqeMem: sqeMem,
		sqHead: (*uint32)(at(p.sqOff.head)), sqTail: (*uint32)(at(p.sqOff.tail)), sqMask: *(*uint32)(at(p.sqOff.ringMask)),
		cqHead: (*uint32)(at(p.cqOff.head)), cqTail: (*uint32)(at(p.cqOff.tail)), cqMask: *(*uint32)(at(p.cqOff.ringMask)),
		sqes: unsafe.Slice((*uringSQE)(unsafe.Pointer(&sqeMem[0])), p.sqEntries),
		cqes: unsafe.Slice((*uringCQE)(at(p.cqOff.f5)), p.cqEntries), // cqes
	}
	array := unsafe.Slice((*uint32)(at(p.sqOff.f6)), p.sqEntries) // array
	for i := range array {
		array[i] = uint32(i)
	}
	r.arena = make([]byte, 0, 16<<10)
	r.got = make([]bool, 0, sendRingEntries)
	return r
}

func (r *sendRing) close() {
	syscall.Munmap(r.sqeMem)
	syscall.Munmap(r.ringMem)
	syscall.Close(r.fd)
}

// hold copies b to be sent on conn's socket at the turn's end; it reports
// false when the ring is full (the caller writes at once).
func (r *sendRing) hold(c *client, conn *sockio.Conn, b []byte) bool {
	if r.broken || len(r.held) == sendRingEntries || len(r.arena)+len(b) > maxArena || conn.FD() < 0 {
		return false
	}
	off := len(r.arena)
	r.arena = append(r.arena, b...)
	r.held = append(r.held, held{c: c, conn: conn, off: off, size: len(b)})
	return true
}

// send sends every held request in one system call and returns those
// that did not all go (their sessions hold the rest, Conn.Unsent), for
// the loop to resume their clients.
func (r *sendRing) send() []held {
	n := len(r.held)
	r.short = r.short[:0]
	if n == 0 {
		return nil
	}
	tail := *r.sqTail
	for i, h := range r.held {
		sqe := &r.sqes[(tail+uint32(i))&r.sqMask]
		*sqe = uringSQE{opcode: ioringOpSend, fd: int32(h.conn.FD()),
			addr: uint64(uintptr(unsafe.Pointer(&r.arena[h.off]))), len: uint32(h.size),
			opFlags: syscall.MSG_DONTWAIT | syscall.MSG_NOSIGNAL, userData: uint64(i)}
	}
	atomic.StoreUint32(r.sqTail, tail+uint32(n))
	// Submit without waiting: a send that may not block completes inside
	// the call. A call interrupted by a signal has submitted nothing and
	// is made again; one that fails leaves its entries unsubmitted, and
	// the ring is not used again (its requests go by write).
	var submitted int
	for {
		m, _, errno := syscall.RawSyscall6(sysIOUringEnter, uintptr(r.fd), uintptr(n), 0, 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno == 0 {
			submitted = int(m)
		}
		break
	}
	r.enters++
	r.got = r.got[:n]
	clear(r.got)
	for done := 0; done < submitted; {
		head, ctail := *r.cqHead, atomic.LoadUint32(r.cqTail)
		for ; head != ctail; head++ {
			cqe := r.cqes[head&r.cqMask]
			i := int(cqe.userData)
			r.got[i] = true
			done++
			if h := r.held[i]; int(cqe.res) != h.size {
				h.conn.Unsent(r.arena[h.off+max(int(cqe.res), 0):h.off+h.size], cqe.res)
				r.short = append(r.short, h)
			}
		}
		atomic.StoreUint32(r.cqHead, head)
		if done < submitted {
			syscall.RawSyscall6(sysIOUringEnter, uintptr(r.fd), 0, uintptr(submitted-done), ioringEnterGetEvents, 0, 0)
		}
	}
	if submitted < n {
		r.broken = true
		for i, h := range r.held {
			if !r.got[i] {
				h.conn.Unsent(r.arena[h.off:h.off+h.size], -int32(syscall.EAGAIN))
				r.short = append(r.short, h)
			}
		}
	}
	r.sent += int64(n)
	r.shortSends += int64(len(r.short))
	r.held = r.held[:0]
	r.arena = r.arena[:0]
	return r.short
}
