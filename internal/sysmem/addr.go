package sysmem

import "unsafe"

// uintptrOf returns the address of b's first byte, for page alignment.
func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
