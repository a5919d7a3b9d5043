// Package xid reads the NVIDIA driver's error reports (Xid) from the kernel
// log. A GPU fault there names the process whose work faulted: under MPS,
// where every client's context ends with the same error and MPS's own log
// names whichever client it noticed first, it is what tells the tenant that
// faulted from those that ended beside it. Reading the kernel log needs
// privilege where kernel.dmesg_restrict is set; Read says so.
package xid

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Event is one Xid report.
type Event struct {
	At      time.Time // from the kernel's clock, related to the wall clock when read
	Device  string    // the GPU the driver names: "PCI:0000:00:06" (its PCI bus and device)
	Xid     int       // 31: MMU fault, 13: SM exception, 43: a channel stopped...
	PID     int       // 0 where the driver did not know it
	Name    string    // the process's command name
	Message string    // the rest of the report
}

var line = regexp.MustCompile(`NVRM: Xid \(([^)]*)\): (\d+), pid=(\d+|'<unknown>'|<unknown>), name=([^,]*), (.*)`)

// Parse reads /dev/kmsg records ("prio,seq,usec,flags;message") or dmesg
// lines from r, keeping the Xid reports. boot is the wall time of the
// kernel clock's zero.
func Parse(r io.Reader, boot time.Time) []Event {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		text := sc.Text()
		var usec int64
		if head, msg, ok := strings.Cut(text, ";"); ok && strings.Count(head, ",") >= 3 {
			f := strings.Split(head, ",")
			usec, _ = strconv.ParseInt(f[2], 10, 64)
			text = msg
		}
		m := line.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		x, _ := strconv.Atoi(m[2])
		pid, _ := strconv.Atoi(m[3])
		out = append(out, Event{At: boot.Add(time.Duration(usec) * time.Microsecond), Device: strings.TrimSpace(m[1]), Xid: x, PID: pid,
			Name: strings.TrimSpace(m[4]), Message: strings.TrimSpace(m[5])})
	}
	return out
}

// ErrUnreadable says the kernel log could not be read.
var ErrUnreadable = errors.New("the kernel log is not readable here (kernel.dmesg_restrict is set; " +
	"run carve as root or with CAP_SYSLOG): which tenant's kernel faulted cannot be told")

// KernelLog is the kernel log's device, which Read reads. In a container
// it is there, and may be opened, only where the container is privileged
// (its device cgroup refuses it otherwise).
const KernelLog = "/dev/kmsg"

// Read returns the Xid reports in the kernel log (KernelLog) now.
func Read() ([]Event, error) {
	// raw reads: Go's poller would wait for a record at the end instead of
	// returning EAGAIN
	fd, err := syscall.Open(KernelLog, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, ErrUnreadable
		}
		return nil, fmt.Errorf("kernel log: %w", err)
	}
	defer syscall.Close(fd)
	// the log's timestamps are printk's clock, CLOCK_MONOTONIC's
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return nil, err
	}
	boot := time.Now().Add(-time.Duration(ts.Nano()))
	return Parse(&records{fd: fd}, boot), nil
}

// records reads /dev/kmsg one record per read until none is left.
type records struct {
	fd   int
	buf  []byte
	done bool
}

func (r *records) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.done {
			return 0, io.EOF
		}
		rec := make([]byte, 8192)
		n, err := syscall.Read(r.fd, rec)
		switch {
		case errors.Is(err, syscall.EAGAIN), err == nil && n <= 0:
			r.done = true
		case errors.Is(err, syscall.EPIPE):
			continue // overwritten while being read: the next one
		case err != nil:
			return 0, err
		default:
			r.buf = append(rec[:n:n], '\n')
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// Near returns the first report for pid within window of at.
func Near(events []Event, pid int, at time.Time, window time.Duration) (Event, bool) {
	for _, e := range events {
		if e.PID == pid && e.At.Sub(at) < window && at.Sub(e.At) < window {
			return e, true
		}
	}
	return Event{}, false
}
