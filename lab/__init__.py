"""Developer tooling around the real Pi agent: its pinned install, a scripted model server, sample generation."""
