// Package dratest runs a command the way a container runtime runs it with
// CDI devices, without a runtime or an image: the CDI library applies the
// devices' edits to an OCI spec, then the spec's bind mounts and
// environment are set up by hand in new mount and PID namespaces
// (util-linux's unshare, as root), over a private /run. The command sees
// the node's files otherwise, and its pids are those of a container.
package dratest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// Available says why Command cannot work here, or nil.
func Available() error {
	out, err := exec.Command("unshare", "--mount", "--pid", "--fork", "--mount-proc", "--kill-child",
		"sh", "-c", "mount -t tmpfs dratest /run && echo $$").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		return fmt.Errorf("new mount and PID namespaces (unshare, as root) are not available: %v: %s", err, out)
	}
	return nil
}

// Command returns the command that runs argv with the CDI devices of the
// specs in cdiDir applied, over the environment env, and the OCI spec the
// edits made. Killing the command ends everything in its namespaces.
func Command(cdiDir string, devices, env []string, argv ...string) (*exec.Cmd, *oci.Spec, error) {
	spec, err := edited(cdiDir, devices, env, argv)
	if err != nil {
		return nil, nil, err
	}
	script := []string{"set -e", "mount -t tmpfs dratest /run"}
	for _, m := range spec.Mounts {
		if m.Type != "bind" {
			return nil, nil, fmt.Errorf("mount of %s: type %q, and only bind mounts are set up by hand", m.Destination, m.Type)
		}
		st, err := os.Stat(m.Source)
		if err != nil {
			return nil, nil, fmt.Errorf("mount source: %w", err)
		}
		if st.IsDir() {
			script = append(script, "mkdir -p "+quote(m.Destination))
		} else {
			script = append(script, "mkdir -p \"$(dirname "+quote(m.Destination)+")\"", "touch "+quote(m.Destination))
		}
		script = append(script, "mount --rbind "+quote(m.Source)+" "+quote(m.Destination))
		for _, o := range m.Options {
			if o == "ro" {
				script = append(script, "mount -o remount,bind,ro "+quote(m.Destination))
			}
		}
	}
	if spec.Linux != nil && len(spec.Linux.Devices) > 0 {
		return nil, nil, errors.New("device nodes are not set up by hand")
	}
	run := []string{"exec", "env", "-i"}
	for _, kv := range spec.Process.Env {
		run = append(run, quote(kv))
	}
	for _, a := range argv {
		run = append(run, quote(a))
	}
	script = append(script, strings.Join(run, " "))
	cmd := exec.Command("unshare", "--mount", "--pid", "--fork", "--mount-proc", "--kill-child", "--propagation", "private",
		"sh", "-c", strings.Join(script, "\n"))
	return cmd, spec, nil
}

// Direct returns the command that runs argv in no namespace of its own,
// with the CDI devices' environment in which every path under a bind
// mount's destination names that path under the mount's source instead:
// the edits applied by hand where Command cannot run.
func Direct(cdiDir string, devices, env []string, argv ...string) (*exec.Cmd, error) {
	spec, err := edited(cdiDir, devices, env, argv)
	if err != nil {
		return nil, err
	}
	mounts := slices.Clone(spec.Mounts)
	slices.SortFunc(mounts, func(a, b oci.Mount) int { return len(b.Destination) - len(a.Destination) })
	cmd := exec.Command(argv[0], argv[1:]...)
	for _, kv := range spec.Process.Env {
		k, v, _ := strings.Cut(kv, "=")
		for _, m := range mounts {
			if rest, ok := strings.CutPrefix(v, m.Destination); ok && (rest == "" || rest[0] == '/') {
				v = m.Source + rest
				break
			}
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd, nil
}

// edited is the OCI spec of argv over env with the CDI devices applied.
func edited(cdiDir string, devices, env, argv []string) (*oci.Spec, error) {
	cache, err := cdi.NewCache(cdi.WithSpecDirs(cdiDir), cdi.WithAutoRefresh(false))
	if err != nil {
		return nil, err
	}
	spec := &oci.Spec{Process: &oci.Process{Env: env, Args: argv}}
	if _, err := cache.InjectDevices(spec, devices...); err != nil {
		return nil, err
	}
	return spec, nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
