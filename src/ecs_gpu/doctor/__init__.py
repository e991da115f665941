"""Doctor: checks over a snapshot of a live deployment, and the host probe's parser."""
