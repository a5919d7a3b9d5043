// Package mps runs carve's own MPS control daemon, in a pipe directory of
// carve's, so that partitioned processes co-run on the GPU instead of
// time-slicing, without touching any MPS server someone else runs.
package mps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultConnections is CUDA_DEVICE_MAX_CONNECTIONS for clients: MPS's
// default of 2 serializes a client's streams; 8 is what a process without
// MPS gets. It costs startup: on the H100 a client with 8 took about 90 ms
// longer to run its first kernel than one with MPS's default.
const DefaultConnections = 8

// MaxConnections is the most CUDA_DEVICE_MAX_CONNECTIONS allows.
const MaxConnections = 32

// Variables of the CUDA driver that make a process an MPS client.
const (
	VarPipeDir     = "CUDA_MPS_PIPE_DIRECTORY"
	VarLogDir      = "CUDA_MPS_LOG_DIRECTORY"
	VarConnections = "CUDA_DEVICE_MAX_CONNECTIONS"
)

// VarDir names carve's daemon's directory (Default) to carve itself.
const VarDir = "CARVE_MPS_DIR"

// Daemon names one MPS control daemon by its directories.
type Daemon struct {
	Root    string // holds pipe/ and log/
	Control string // path of nvidia-cuda-mps-control
}

// Default is carve's daemon: $CARVE_MPS_DIR, else TMPDIR/carve-mps-UID.
func Default() Daemon {
	root := os.Getenv(VarDir)
	if root == "" {
		root = filepath.Join(os.TempDir(), fmt.Sprintf("carve-mps-%d", os.Getuid()))
	}
	return Daemon{Root: root}
}

// OutsideEnv keeps a process out of any MPS server: its pipe directory is
// one where no server listens, so the driver gives it a context of its own.
func (d Daemon) OutsideEnv() []string {
	return []string{VarPipeDir + "=" + filepath.Join(d.Root, "none")}
}

// PipeDir is CUDA_MPS_PIPE_DIRECTORY for the daemon and its clients.
func (d Daemon) PipeDir() string { return filepath.Join(d.Root, "pipe") }

// LogDir is CUDA_MPS_LOG_DIRECTORY.
func (d Daemon) LogDir() string { return filepath.Join(d.Root, "log") }

// ClientEnv is what a process needs to become a client of d with the given
// number of hardware connections (work queues), and VarDir, so that a carve
// run started in it finds d as carve's daemon: one that did not would take
// its tenant for a process of its own context while the driver made it a
// client of d (no touch, no MPS memory limit, carve ls saying "own").
func (d Daemon) ClientEnv(connections int) []string {
	return []string{
		VarDir + "=" + d.Root,
		VarPipeDir + "=" + d.PipeDir(),
		VarLogDir + "=" + d.LogDir(),
		VarConnections + "=" + strconv.Itoa(connections),
	}
}

var searchDirs = []string{"/usr/local/nvidia/bin", "/usr/bin", "/usr/local/cuda/bin"}

// ControlPath finds nvidia-cuda-mps-control on PATH or where drivers install it.
func (d Daemon) ControlPath() (string, error) {
	if d.Control != "" {
		return d.Control, nil
	}
	if p, err := exec.LookPath("nvidia-cuda-mps-control"); err == nil {
		return p, nil
	}
	for _, dir := range searchDirs {
		p := filepath.Join(dir, "nvidia-cuda-mps-control")
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("nvidia-cuda-mps-control not found on PATH or in " + strings.Join(searchDirs, ", "))
}

// Trusted says why the daemon's directories (Root and its pipe directory,
// those that exist) cannot be trusted, or nil: each must be a directory,
// not a link, owned by this user or root, that no one else may write.
// Another user's directory, or one others may write, could hold the pid
// file and pipes of a program of theirs, which carve's tenants would then
// be told to connect to.
func (d Daemon) Trusted() error {
	for _, dir := range []string{d.Root, d.PipeDir()} {
		st, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("MPS directory: %w", err)
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() && sys.Uid != 0 || st.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("MPS directory %s must be a directory owned by uid %d (or root) that no one else may write", dir, os.Getuid())
		}
	}
	return nil
}

// PID returns the control daemon's pid if it runs, else 0; a daemon whose
// directories are not Trusted does not run, for carve.
func (d Daemon) PID() int {
	if d.Trusted() != nil {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(d.PipeDir(), "nvidia-cuda-mps-control.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0
	}
	if !d.isControl(pid) {
		return 0 // a pid file left behind (another PID namespace, a reboot), its pid reused
	}
	if ended(pid) {
		return 0 // killed, and not yet reaped by its parent
	}
	return pid
}

// Gone says whether process pid has ended: no such process, or one that
// waits to be reaped (a zombie, which signals still reach).
func Gone(pid int) bool {
	// EPERM: it runs, as another user
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) || ended(pid)
}

// ended says whether process pid has ended and waits to be reaped; one
// whose state cannot be read is taken to run.
func ended(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b) // "pid (comm) state ...", where comm may hold ") "
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && strings.HasPrefix(s[i+1:], " Z")
}

// isControl says whether process pid runs the control program, by the
// name the kernel keeps for it (its first 15 bytes); a process whose name
// cannot be read is taken to be it.
func (d Daemon) isControl(pid int) bool {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	path, perr := d.ControlPath()
	if err != nil || perr != nil {
		return true
	}
	name := filepath.Base(path)
	if len(name) > 15 {
		name = name[:15]
	}
	return strings.TrimSpace(string(comm)) == name
}

// Running reports whether the daemon runs.
func (d Daemon) Running() bool { return d.PID() != 0 }

func (d Daemon) command(ctx context.Context, args ...string) (*exec.Cmd, error) {
	ctl, err := d.ControlPath()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, ctl, args...)
	cmd.Env = append(os.Environ(), VarPipeDir+"="+d.PipeDir(), VarLogDir+"="+d.LogDir())
	return cmd, nil
}

// Start starts the control daemon and waits until it answers.
func (d Daemon) Start() error {
	if err := d.Trusted(); err != nil {
		return err
	}
	if d.Running() {
		return fmt.Errorf("MPS already runs in %s (pid %d)", d.Root, d.PID())
	}
	for _, dir := range []string{d.PipeDir(), d.LogDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("MPS directories: %w", err)
		}
	}
	if err := d.Trusted(); err != nil { // made meanwhile by another
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd, err := d.command(ctx, "-d")
	if err != nil {
		return err
	}
	// a session of its own: a signal to the starter's process group (^C at
	// a terminal, timeout, a supervisor's) does not reach MPS, which runs
	// on for its clients when the starter ends
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("starting MPS: %w: %s", err, bytes.TrimSpace(out))
	}
	for !d.Running() {
		if ctx.Err() != nil {
			return fmt.Errorf("MPS did not come up within 10 s; see %s", d.LogDir())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Query sends one command to the control daemon and returns its answer.
func (d Daemon) Query(line string) (string, error) {
	if !d.Running() {
		return "", fmt.Errorf("MPS is not running in %s", d.Root)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd, err := d.command(ctx)
	if err != nil {
		return "", err
	}
	cmd.Stdin = strings.NewReader(line + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("MPS %q: %w: %s", line, err, bytes.TrimSpace(out))
	}
	return strings.TrimSpace(string(out)), nil
}

// Stop asks the daemon to quit and waits until it is gone.
func (d Daemon) Stop() error {
	pid := d.PID()
	if pid == 0 {
		return fmt.Errorf("MPS is not running in %s", d.Root)
	}
	if _, err := d.Query("quit"); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for !Gone(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("MPS (pid %d) did not quit within 15 s: clients may still be attached", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
