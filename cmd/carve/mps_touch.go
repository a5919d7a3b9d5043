// carve mps touch: connects to carve's MPS as a short-lived client, so that
// the tenants connected before it are no longer the newest client.

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/mps"
)

// touchPoll is how often carve mps touch --after looks at its tenant's
// block; touchConnectMax bounds a connection to MPS (a wedged server).
const (
	touchPoll       = 20 * time.Millisecond
	touchConnectMax = time.Minute
)

// touchTimes are when carve mps touch --after connects, from its tenant's
// first launch: at once, and again as the tenant goes on setting up. A
// touch right after an LS's first launch left it slow where one after its
// graph's capture did not (README, "MPS, and what it brings with it"):
// what it sets up while it is the newest client is slow until a client
// connects after it.
var touchTimes = []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
	16 * time.Second, 32 * time.Second, 64 * time.Second, 128 * time.Second}

func newMPSTouchCmd() *cobra.Command {
	var after string
	var background bool
	c := &cobra.Command{
		Use:   "touch [--after PID|BLOCK [--background]]",
		Short: "Connect to carve's MPS as a short-lived client, so that no tenant is its newest",
		Long: `touch makes a context on each visible GPU as a client of carve's MPS daemon,
then exits. MPS runs the kernels of the client that connected last 6-12%
slower than those of clients connected before it, for as long as no other
client connects after it, even once that one has left (an efficientnet_b0
graph on an H100: 1.01-1.04 ms a replay as the newest client, 0.92-0.94 as
an older one), and what a client sets up while it is the newest (its CUDA
graph's capture) stays slow until one does. So an LS tenant started beside
a running BE would serve slower than one started first. carve run starts
'carve mps touch --after PID --background' for every tenant under MPS.

--after waits for the tenant of that pid (its control block in carve's
runtime directory) or of that control block's path to launch a kernel,
then touches at once and again 1, 2, 4, ... 128 s after that launch while
the tenant lives (each touch a process of its own); if the tenant ends
first, it stops. --background returns at once, leaving all that to a
process of its own.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d := mps.Default()
			if !d.Running() {
				return errors.New("carve's MPS daemon is not running (carve mps start): no client to touch")
			}
			if background && after == "" {
				return errors.New("--background waits for a tenant: give --after")
			}
			if after != "" {
				path, err := touchBlock(after)
				if err != nil {
					return err
				}
				self, err := os.Executable()
				if err != nil {
					return err
				}
				if background { // a tenant that is not there is said here, not by a process unseen
					w, err := ctl.WatchBlock(path)
					if err != nil {
						return fmt.Errorf("--after %s: %w", after, err)
					}
					w.Close()
					return mps.StartTouch(self, path, os.Environ())
				}
				// each touch a process of its own: a process is one client
				return touchAfterLaunch(path, time.Sleep, func() error { return exec.Command(self, "mps", "touch").Run() })
			}
			for _, kv := range d.ClientEnv(1) {
				k, v, _ := strings.Cut(kv, "=")
				os.Setenv(k, v)
			}
			n, err := touchConnect()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "connected to carve's MPS on %d GPU(s) and left\n", n)
			return nil
		},
	}
	c.Flags().StringVar(&after, "after", "", "wait until this tenant (a pid, or a control block's path) has launched a kernel")
	c.Flags().BoolVar(&background, "background", false, "return at once; wait and connect in a process of its own")
	return c
}

// touchBlock is the control block's path of a tenant named by pid (in
// carve's runtime directory) or by path.
func touchBlock(after string) (string, error) {
	if strings.ContainsRune(after, '/') {
		return after, nil
	}
	pid, err := strconv.Atoi(after)
	if err != nil || pid <= 0 {
		return "", fmt.Errorf("--after %q: want a pid or a control block's path", after)
	}
	dir, err := ctl.Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, after), nil
}

// touchAfterLaunch waits for the first launch of the tenant of the block
// at path, then touches at touchTimes from then while the tenant runs.
func touchAfterLaunch(path string, sleep func(time.Duration), touch func() error) error {
	w, err := ctl.WatchBlock(path)
	if err != nil {
		return err
	}
	defer w.Close()
	if n, err := w.AwaitLaunch(touchPoll, sleep); err != nil || n == 0 {
		return err // ended with no launch: nobody to make older
	}
	var at time.Duration
	for _, t := range touchTimes {
		sleep(t - at)
		at = t
		if !w.Running() {
			return nil
		}
		if err := touch(); err != nil {
			return err
		}
	}
	return nil
}

// touchConnect makes the primary context of each visible GPU, a client
// connection to MPS, and says how many; the process's exit ends them.
func touchConnect() (int, error) {
	t := time.AfterFunc(touchConnectMax, func() {
		fmt.Fprintf(os.Stderr, "carve: no connection to MPS within %v\n", touchConnectMax)
		os.Exit(1)
	})
	defer t.Stop()
	if _, _, err := cuda.OpenPrimary(0); err != nil {
		return 0, err
	}
	n, err := cuda.DeviceCount()
	for i := 1; i < n && err == nil; i++ {
		var dev cuda.Device
		if dev, err = cuda.GetDevice(i); err == nil {
			_, err = dev.RetainPrimary()
		}
	}
	return n, err
}

// touchAfter starts carve mps touch --after block in the background for a
// tenant under MPS (flags), with its environment, and says why not where
// it could not (unless quiet).
func touchAfter(cmd *cobra.Command, env []string, block string, flags uint32, quiet bool) {
	if flags&ctl.FlagMPS == 0 {
		return
	}
	self, err := os.Executable()
	if err == nil {
		c := exec.Command(self, "mps", "touch", "--after", block, "--background")
		c.Env = env
		var out []byte
		if out, err = c.CombinedOutput(); err != nil {
			err = fmt.Errorf("%v %s", err, bytes.TrimSpace(out))
		}
	}
	if err != nil && !quiet {
		note(cmd, "carve mps touch: %v: this tenant may run 6-12%% slower while it is MPS's newest client", err)
	}
}
