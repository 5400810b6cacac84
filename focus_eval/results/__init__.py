"""The output contract: sample lines, results lines, run manifests, and their JSON writers."""
