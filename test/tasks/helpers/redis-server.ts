export { NO_REDIS, RedisServer, redisInstalled } from "../../../bench/redis-server.js";
