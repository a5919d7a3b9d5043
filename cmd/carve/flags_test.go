// Tests of carve run's tide flags (flags.go): the policy they make, and
// that they read back what ctl.Policy.RunArgs writes.

package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
)

// runPolicy parses args as carve run's tide flags.
func runPolicy(t *testing.T, args ...string) (ctl.Policy, error) {
	t.Helper()
	var f tideFlags
	c := &cobra.Command{}
	f.add(c)
	if err := c.ParseFlags(args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return f.policy()
}

// TestRunFlagsReadRunArgs: the flags ctl.Policy.RunArgs writes for a
// policy (bench serve's tide settings) give carve run that policy back,
// and every field's flag tag names a flag of carve run.
func TestRunFlagsReadRunArgs(t *testing.T) {
	for _, p := range []ctl.Policy{
		{Class: ctl.ClassBE, Share: 1, Epoch: 20 * time.Millisecond, Inflight: 2, Queue: 0, Floor: 12},
		{Class: ctl.ClassBE, Share: 0.05, Epoch: 10 * time.Millisecond, Inflight: 0, Queue: 300 * time.Microsecond},
		{Class: ctl.ClassLS, Own: true},
		{Class: ctl.ClassLS},
		{Class: ctl.ClassLS, Mem: ctl.MemLimit{Bytes: 12 << 30}},
		{Class: ctl.ClassBE, Share: 0.05, Epoch: 10 * time.Millisecond, Inflight: 8, Mem: ctl.MemLimit{Percent: 60}},
		{},
	} {
		got, err := runPolicy(t, p.RunArgs()...)
		if err != nil || got != p {
			t.Errorf("carve run %q: %+v, %v; want %+v", p.RunArgs(), got, err, p)
		}
	}
	run := newRunCmd()
	pt := reflect.TypeFor[ctl.Policy]()
	for i := range pt.NumField() {
		if name := pt.Field(i).Tag.Get("flag"); name != "" && run.Flags().Lookup(name) == nil {
			t.Errorf("Policy.%s names --%s, which carve run does not have", pt.Field(i).Name, name)
		}
	}
}

// TestRunFlagsPolicy: carve run's flags make a policy by its rules, and
// say which flag is wrong.
func TestRunFlagsPolicy(t *testing.T) {
	if p, err := runPolicy(t, "--ls"); err != nil || p != (ctl.Policy{Class: ctl.ClassLS}) {
		t.Errorf("--ls: %+v, %v; want an LS policy without the BE defaults", p, err)
	}
	if p, err := runPolicy(t, "--be", "--epoch", "0s"); err != nil || p.Epoch != ctl.DefaultPolicy.Epoch || p.Inflight != ctl.DefaultPolicy.Inflight {
		t.Errorf("--be --epoch 0s: %+v, %v; want the default epoch", p, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ls", "--be"}, "--ls and --be exclude each other"},
		{[]string{"--ls", "--inflight", "3"}, "--inflight is for BE tenants"},
		{[]string{"--queue", "1ms"}, "--queue is for BE tenants"},
		{[]string{"--be", "--own"}, "--own is for LS tenants"},
		{[]string{"--be", "--be-floor", "4"}, "--be-floor: a BE floor of 4 TPCs: want at least 8"},
		{[]string{"--be", "--inflight", "-2"}, "--inflight: kernels in flight -2"},
	} {
		if _, err := runPolicy(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestEveryPolicyFieldIsAFlag: a policy with each of its class's fields
// set (to a value of the field's type that Normalize takes) comes back
// through carve run's flags whole, so a field added to ctl.Policy with its
// tags is a flag of carve run, or this names it.
func TestEveryPolicyFieldIsAFlag(t *testing.T) {
	for _, class := range ctltest.Classes {
		for _, f := range ctl.PolicyFields() {
			if !ctltest.For(class, f) {
				continue
			}
			p, err := ctltest.WithField(class, f)
			if err != nil {
				t.Fatal(err)
			}
			if f.Flag == "" {
				t.Errorf("Policy.%s has no flag tag: carve run cannot set it", f.Name)
				continue
			}
			if got, err := runPolicy(t, p.RunArgs()...); err != nil || got != p {
				t.Errorf("Policy.%s: carve run %q gives %+v, %v; want %+v", f.Name, p.RunArgs(), got, err, p)
			}
		}
	}
}
