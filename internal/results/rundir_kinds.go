package results

import (
	"os"
	"path/filepath"
)

// Files of the run directories that memscan merge and memscan compare write.
const (
	FileCrossRankText    = "cross_rank_report.txt"
	FileCrossRankJSON    = "cross_rank.json"
	FileCrossRankMsgpack = "cross_rank.msgpack"
	FileCompareMarkdown  = "compare.md"
	FileCompareJSON      = "compare.json"
)

// runDirMarkers are the file sets that mark a directory as one memscan wrote: analyze, merge, compare and
// calibrate runs, in that order.
var runDirMarkers = [][]string{
	{FileSummary, FileMsgpack},
	{FileCrossRankJSON, FileCrossRankMsgpack},
	{FileCompareJSON, FileCompareMarkdown},
	{FileCalibrationJSON, FileCalibrationMarkdown},
}

// IsRunDir reports whether dir is a memscan run directory (its report files are outputs, not inputs): one that
// analyze, merge, compare or calibrate wrote. Input discovery skips such directories.
func IsRunDir(dir string) bool {
	for _, set := range runDirMarkers {
		if hasAll(dir, set) {
			return true
		}
	}
	return false
}

func hasAll(dir string, files []string) bool {
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}
