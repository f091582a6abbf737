"""What the pages share on screen: widgets, the sidebar, links, error messages, the class tools,
showing a figure, the pure formatting of tables and text, and the words for a colour scale."""
