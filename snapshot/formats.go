package snapshot

// Formats produced by the JSON and text decoders.
const (
	FormatTracerJSON     = "tracer-json"
	FormatMemoryTimeline = "memory-timeline"
	FormatMegatronLog    = "megatron-log"
	FormatDeepSpeedLog   = "deepspeed-log"
	FormatTorchtitanLog  = "torchtitan-log"
)
