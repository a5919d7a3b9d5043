// Fuzz targets of the blocks as read from disk: any bytes in a control
// block's file (Open, Snapshot, Read) or a node block's (OpenNode, Nodes)
// are read or refused with an error, never a panic or a wait.

package ctl_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// blockBytes are the bytes of a block Create makes from in.
func blockBytes(f *testing.F, in ctl.Init) []byte {
	dir := f.TempDir()
	h, err := ctl.Create(dir, in)
	if err != nil {
		f.Fatal(err)
	}
	h.Close()
	b, err := os.ReadFile(h.Path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzControlBlock: a process's block and a claim's root of any bytes.
func FuzzControlBlock(f *testing.F) {
	const gpu0, gpu1 = "GPU-72602ec6-310b-1ada-b02f-5c7ec60e17ef", "GPU-5d1e2b7a-0c44-4f0e-9a31-7be0c2f4d6a1"
	f.Add(blockBytes(f, ctl.Init{PID: os.Getpid(), Comm: []string{"train", "-x"}, Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live}}}))
	f.Add(blockBytes(f, ctl.Init{PID: os.Getpid(), Class: ctl.ClassBE, Parts: []ctl.Part{
		{GPU: gpu0, Node: ctl.NodeName(gpu0), Mask: enableOnly(0, 1), Live: live, Floor: live},
		{GPU: gpu1, Node: ctl.NodeName(gpu1), Mask: enableOnly(2), Live: live}}}))
	f.Add(blockBytes(f, ctl.Init{PID: 1, Tenant: 1}))
	f.Add(make([]byte, ctl.Size))
	f.Add([]byte{0x43, 0x52, 0x56, 0x45})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "1"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		cd := filepath.Join(dir, ctl.ClaimsDir, "c")
		os.MkdirAll(cd, 0o755)
		if err := os.WriteFile(filepath.Join(cd, ctl.ClaimRoot), data, 0o644); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(cd, "2"), data, 0o600)
		ours := len(data) == ctl.Size && binary.NativeEndian.Uint32(data) == ctl.Magic &&
			binary.NativeEndian.Uint16(data[4:]) == ctl.Version && binary.NativeEndian.Uint16(data[6:]) == ctl.Size
		h, err := ctl.Open(dir, 1)
		if ours != (err == nil) {
			t.Fatalf("Open of %d bytes (of this layout: %v): %v", len(data), ours, err)
		}
		if err == nil {
			s := h.Snapshot()
			s.Parts()
			s.GPUs()
			h.Close()
		}
		l, err := ctl.Read(dir)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		for _, b := range l.Skipped {
			if b.Reason == "" || b.Why == "" {
				t.Errorf("skipped %+v without saying why", b)
			}
		}
		if !ours && len(l.Live)+len(l.Ended)+len(l.Claims) > 0 {
			t.Errorf("a block of another layout listed: %+v", l)
		}
	})
}

// FuzzNodeBlock: a node block of any bytes.
func FuzzNodeBlock(f *testing.F) {
	dir := f.TempDir()
	n, err := ctl.OpenNode(dir, "node-x", live)
	if err != nil {
		f.Fatal(err)
	}
	n.SetFixed(enableOnly(3))
	n.Close()
	good, err := os.ReadFile(filepath.Join(dir, "node-x"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	busy := append([]byte(nil), good...)
	slots := 128 // the slots' offset: after the header
	binary.NativeEndian.PutUint32(busy[slots:], uint32(os.Getpid()))
	binary.NativeEndian.PutUint32(busy[slots+4:], 1)
	f.Add(busy)
	f.Add(make([]byte, ctl.NodeSize))
	f.Add([]byte("NODE"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "node-x")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		// Nodes reads the header's magic and version, OpenNode its size too
		listed := len(data) == ctl.NodeSize && binary.NativeEndian.Uint32(data) == ctl.NodeMagic &&
			binary.NativeEndian.Uint16(data[4:]) == ctl.NodeVersion
		ours := listed && binary.NativeEndian.Uint16(data[6:]) == ctl.NodeSize
		nodes, err := ctl.Nodes(dir)
		if err != nil {
			t.Fatal(err)
		}
		if listed != (len(nodes) == 1) {
			t.Fatalf("Nodes of %d bytes (of this layout: %v): %d blocks", len(data), listed, len(nodes))
		}
		for _, n := range nodes {
			n.Live()
			n.Fixed()
			n.LS()
			n.Reclaim()
			n.Name()
			n.Close()
		}
		n, err := ctl.OpenNode(dir, "node-x", live)
		if ours != (err == nil) {
			t.Fatalf("OpenNode of %d bytes (of this layout: %v): %v", len(data), ours, err)
		}
		if err == nil {
			n.LS()
			n.Close()
		}
	})
}
