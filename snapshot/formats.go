package snapshot

// Formats produced by the JSON and text decoders.
const (
	FormatMemoryTimeline = "memory-timeline"
	FormatMegatronLog    = "megatron-log"
	FormatDeepSpeedLog   = "deepspeed-log"
	FormatTorchtitanLog  = "torchtitan-log"
)
