return { controller = "configmap-marker" }
