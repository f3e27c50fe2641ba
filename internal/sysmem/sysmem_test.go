package sysmem

import (
	"io/fs"
	"testing"
)

func TestTotal(t *testing.T) {
	meminfo := "MemTotal:       24570560 kB\nMemFree:         1000000 kB\n"
	tests := []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{
		{"physical only", map[string]string{"/proc/meminfo": meminfo}, 24570560 << 10, true},
		{"cgroup v2 lower", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "8589934592\n"}, 8 << 30, true},
		{"cgroup v2 unlimited", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "max\n"}, 24570560 << 10, true},
		{"cgroup v1 unlimited", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 24570560 << 10, true},
		{"cgroup higher than the machine", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "107374182400"}, 24570560 << 10, true},
		{"cgroup only", map[string]string{"/sys/fs/cgroup/memory.max": "1073741824"}, 1 << 30, true},
		{"nothing readable", map[string]string{}, 0, false},
		{"garbled meminfo", map[string]string{"/proc/meminfo": "MemTotal: lots kB\n"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := func(p string) ([]byte, error) {
				if s, ok := tt.files[p]; ok {
					return []byte(s), nil
				}
				return nil, fs.ErrNotExist
			}
			got, ok := total(read)
			if got != tt.want || ok != tt.ok {
				t.Errorf("total = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	if _, ok := Total(); !ok {
		t.Log("this system reports no memory size; callers use their fallback")
	}
}

// TestKBField: a /proc field in kB, read as bytes: its own line only (not a longer key sharing its start), zero
// allowed, a missing or garbled field refused.
func TestKBField(t *testing.T) {
	status := "Name:\tmemscan\nRssAnon:\t  120 kB\nRssFile:\t 8192 kB\nRssShmem:\t 0 kB\n"
	for _, tc := range []struct {
		content, key string
		want         int64
		ok           bool
	}{
		{status, "RssFile:", 8192 << 10, true},
		{status, "RssShmem:", 0, true},
		{status, "Rss:", 0, false},
		{"RssFile: many kB\n", "RssFile:", 0, false},
		{"RssFile: -4 kB\n", "RssFile:", 0, false},
	} {
		read := func(string) ([]byte, error) { return []byte(tc.content), nil }
		if got, ok := kbField(read, "/proc/self/status", tc.key); got != tc.want || ok != tc.ok {
			t.Errorf("%s in %q = %d, %v; want %d, %v", tc.key, tc.content, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := kbField(func(string) ([]byte, error) { return nil, fs.ErrNotExist }, "/proc/self/status", "RssFile:"); ok {
		t.Error("a missing file read as a field")
	}
}
