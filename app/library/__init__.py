"""The sound library tab: its panel and table, search, restore, regenerate, trash, browsing and
export."""
