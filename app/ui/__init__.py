"""What the pages share on screen: widgets, the sidebar, links, error messages, the class tools,
showing a figure, and the pure formatting of tables and text."""
