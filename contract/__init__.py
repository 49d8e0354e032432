"""What the bot and the workers share: the request record, the thread's Block Kit messages, Slack
mrkdwn, the queue and its Redis keys, the Slack client, the Redis server."""
