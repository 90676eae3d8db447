from imf.cli import main

main()
