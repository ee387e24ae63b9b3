"""The scenario endpoint: a scenario's scripted model served over the providers' HTTP APIs, so
that an agent built on any framework runs against it unchanged and is checked on what it sends."""
