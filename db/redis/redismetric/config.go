package redismetric

// Config is the source of the server's configuration (CONFIG GET of the
// settings that matter), recorded in run.json and again after an event
// changed it; detail: name → value.
const Config = "redis_config"
