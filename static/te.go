package static

import "github.com/memscan/memscan/gpu"

// teWorkspaceBytes is the cuBLASLt workspace Transformer Engine allocates with torch.empty on first use
// (transformer_engine.pytorch get_cublas_workspace_size_bytes): 32 MiB on compute capability >= 9, 4 MiB before.
func teWorkspaceBytes(g gpu.Spec) int64 {
	if g.HopperOrNewer() {
		return 32 * mib
	}
	return 4 * mib
}
