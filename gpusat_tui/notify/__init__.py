"""Notifications when the job's verdict turns: the decision (`decision`, pure), what a notice
says (`message`), the webhook sender (`webhook`), the terminal's sequences (`terminal`) and the
notifier that ties them to a monitor (`notifier`)."""
