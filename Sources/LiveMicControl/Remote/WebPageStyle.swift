/// The page's style sheet (served as `/app.css`).
enum WebPageStyle {
  static let text = """
    body { font-family: system-ui, sans-serif; margin: 0; background: #111; color: #eee; }

    """
}
