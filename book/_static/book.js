// The book's own scripts (issue 12: phone navigation, figures, copy buttons).
