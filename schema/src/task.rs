//! Placeholder: filled by the task-catalog work (issue 3).
