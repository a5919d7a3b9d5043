// The PyTorch victim's script (torch_matmul.py), embedded.

package workload

import _ "embed"

// TorchMatmul is the PyTorch victim's script, run as python3 -c.
//
//go:embed torch_matmul.py
var TorchMatmul string
