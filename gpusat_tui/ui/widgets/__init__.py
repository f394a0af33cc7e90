"""Dashboard widgets: thin views over the app's current frame, assessment and selection."""
