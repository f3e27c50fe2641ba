package snapshot

// Formats produced by the JSON and text decoders.
const (
	FormatMegatronLog    = "megatron-log"
	FormatDeepSpeedLog   = "deepspeed-log"
	FormatTorchtitanLog  = "torchtitan-log"
)
